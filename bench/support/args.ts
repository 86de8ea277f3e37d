// A benchmark's command line: node's parseArgs with the benchmark's own options, plus `--help`
// (prints the benchmark's header comment, which documents its scenario and every option), and a
// bad option or value reported in one line with exit code 2 instead of a stack trace.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** parseArgs(config) for the benchmark in `moduleUrl` (its import.meta.url), with --help. */
export function benchArgs<const T extends { options: ParseArgsOptionsConfig }>(moduleUrl: string, config: T): { values: ReturnType<typeof parseArgs<T>>['values'] } {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ options: { ...config.options, help: { type: 'boolean', short: 'h', default: false } } }));
  } catch (err) {
    return usageError(moduleUrl, (err as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(headerComment(readFileSync(fileURLToPath(moduleUrl), 'utf8')));
    process.exit(0);
  }
  delete values.help;
  return { values: values as ReturnType<typeof parseArgs<T>>['values'] };
}

/** Report a bad argument of the benchmark in `moduleUrl` and exit 2. */
export function usageError(moduleUrl: string, message: string): never {
  const name = basename(fileURLToPath(moduleUrl), '.ts');
  process.stderr.write(`bench ${name}: ${message}\n(npm run bench -- ${name} --help describes the options)\n`);
  process.exit(2);
}

/** The comment lines a benchmark's source opens with, without their `//`: what --help prints. */
export function headerComment(source: string): string {
  const lines: string[] = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('//')) break;
    lines.push(line.replace(/^\/\/ ?/, ''));
  }
  return `${lines.join('\n')}\n`;
}
