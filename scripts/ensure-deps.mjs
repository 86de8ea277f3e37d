// `npm test` and `npm run demo` on a fresh clone: install the locked dependencies first, so the
// README's commands work without a separate `npm ci`. Runs on whichever Node started npm (the
// machine's may be 20; Node 24 arrives with the dependencies), hence plain JavaScript.
// npm runs at --loglevel=error: under Node 20 it would otherwise print an EBADENGINE warning per
// package that wants Node 24, burying the first screen. Errors still reach stderr, and on failure
// npm's own stdout is replayed too.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';

// npm writes this file at the end of every install; older than the lock file = stale install.
const installed = 'node_modules/.package-lock.json';
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync('package-lock.json').mtimeMs) {
  process.stderr.write('installing dependencies (npm ci)…\n');
  const started = Date.now();
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
    stdio: ['inherit', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (npm.status !== 0) {
    if (npm.stdout) process.stderr.write(npm.stdout);
    if (npm.error) process.stderr.write(`npm ci could not run: ${npm.error.message}\n`);
    process.stderr.write(`npm ci failed (exit ${npm.status ?? npm.signal})\n`);
    process.exit(npm.status || 1);
  }
  const packages = Object.keys(JSON.parse(readFileSync(installed, 'utf8')).packages ?? {}).length;
  process.stderr.write(`installed ${packages} packages in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
