// Postgres part of the local stack: Debian's server binaries on a private port and data dir.
// The server refuses to run as root, so as root every server command runs as the `postgres` user
// the Debian package creates. Loopback only, trust auth: this is a developer stack; any managed
// Postgres can be used instead through DATABASE_URL.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, ensureDir, pidAlive, prerequisite, requirePortsFree, run, waitUntil } from './proc.ts';
import { DATABASE_NAME, DATABASE_USER, ports, stackDir } from './topology.ts';

const isRoot = process.getuid?.() === 0;
const pointerFile = join(stackDir, 'postgres.dir');

export const databaseUrl = `postgres://${DATABASE_USER}@127.0.0.1:${ports.postgres}/${DATABASE_NAME}`;

function findBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** Install Debian's postgresql package when the server binaries are missing (root only). */
function ensureInstalled(log: (line: string) => void): string {
  const existing = findBinDir();
  if (existing) return existing;
  aptInstall('postgresql', 'the PostgreSQL server is not installed (/usr/lib/postgresql/<version>/bin/pg_ctl missing)', (line) => log(`postgres: ${line}`));
  const installed = findBinDir();
  if (!installed) throw prerequisite('apt-get installed "postgresql" but no server binaries were found under /usr/lib/postgresql');
  return installed;
}

/** Run a server command as the postgres user (when we are root) or as ourselves. */
function asServerUser(command: string): string {
  if (!isRoot) return run('sh', ['-c', command]);
  return run('su', ['postgres', '-s', '/bin/sh', '-c', command]);
}

const q = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;

/** The folder that holds data/, run/ and the log. Inside .stack when the postgres user can reach it
 *  (a checkout under a 0700 folder such as `mktemp -d` cannot be), else under the postgres user's
 *  home, keyed by this stack's path. */
export function postgresDir(): string {
  if (existsSync(pointerFile)) return readFileSync(pointerFile, 'utf8').trim();
  const inStack = join(stackDir, 'postgres');
  let dir = inStack;
  if (isRoot) {
    ensureDir(stackDir);
    try {
      run('su', ['postgres', '-s', '/bin/sh', '-c', `test -x ${q(stackDir)} && test -r ${q(stackDir)}`]);
    } catch {
      const key = createHash('sha256').update(stackDir).digest('hex').slice(0, 12);
      dir = `/var/lib/postgresql/kmirror-${key}`;
    }
  }
  ensureDir(stackDir);
  writeFileSync(pointerFile, `${dir}\n`);
  return dir;
}

function paths(): { dir: string; data: string; run: string; log: string } {
  const dir = postgresDir();
  return { dir, data: join(dir, 'data'), run: join(dir, 'run'), log: join(dir, 'postgres.log') };
}

/** Pid of our postmaster, if running (from the data dir's postmaster.pid). */
export function postgresPid(): number | undefined {
  const pidFile = join(paths().data, 'postmaster.pid');
  try {
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pidAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function postgresReady(): Promise<boolean> {
  const bin = findBinDir();
  if (!bin) return false;
  try {
    run(join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(ports.postgres), '-d', DATABASE_NAME, '-U', DATABASE_USER]);
    return true;
  } catch {
    return false;
  }
}

export async function startPostgres(log: (line: string) => void): Promise<void> {
  if (postgresPid() !== undefined && (await postgresReady())) return;
  const bin = ensureInstalled(log);
  const p = paths();
  if (postgresPid() === undefined) await requirePortsFree('postgres', [ports.postgres]);
  ensureDir(p.dir);
  if (isRoot) run('chown', ['postgres:postgres', p.dir]);
  if (!existsSync(join(p.data, 'PG_VERSION'))) {
    log('postgres: initdb…');
    asServerUser(`${q(join(bin, 'initdb'))} -D ${q(p.data)} -U postgres -E UTF8 --auth=trust --no-instructions >/dev/null`);
    const conf = [
      '',
      '# kmirror local stack',
      `port = ${ports.postgres}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${p.run}'`,
      'shared_buffers = 256MB',
      'max_connections = 200',
      '',
    ].join('\n');
    // The data dir belongs to the postgres user; append through it.
    asServerUser(`mkdir -p ${q(p.run)} && printf '%s' ${q(conf)} >> ${q(join(p.data, 'postgresql.conf'))}`);
  }
  if (postgresPid() === undefined) {
    log('postgres: starting…');
    asServerUser(`mkdir -p ${q(p.run)} && ${q(join(bin, 'pg_ctl'))} -D ${q(p.data)} -l ${q(p.log)} -w -t 60 start >/dev/null`);
  }
  await waitUntil('postgres', async () => {
    try {
      run(join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(ports.postgres), '-U', 'postgres']);
      return true;
    } catch {
      return false;
    }
  }, { timeoutMs: 60_000, logFile: p.log });
  const psql = (sql: string): string =>
    run(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(ports.postgres), '-U', 'postgres', '-d', 'postgres', '-tAc', sql]);
  if (psql(`select 1 from pg_roles where rolname = '${DATABASE_USER}'`).trim() !== '1') {
    psql(`create role ${DATABASE_USER} login createdb`);
  }
  if (psql(`select 1 from pg_database where datname = '${DATABASE_NAME}'`).trim() !== '1') {
    psql(`create database ${DATABASE_NAME} owner ${DATABASE_USER}`);
  }
}

export function stopPostgres(): boolean {
  const bin = findBinDir();
  if (!bin || postgresPid() === undefined) return false;
  asServerUser(`${q(join(bin, 'pg_ctl'))} -D ${q(paths().data)} -m fast -w stop >/dev/null`);
  return true;
}

export function wipePostgres(): void {
  if (!existsSync(pointerFile)) return;
  const dir = paths().dir;
  rmSync(dir, { recursive: true, force: true });
  rmSync(pointerFile, { force: true });
}

export function postgresLogFile(): string {
  return paths().log;
}
