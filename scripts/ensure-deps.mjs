// `npm test` and `npm run demo` on a fresh clone: install the locked dependencies first, so the
// README's commands work without a separate `npm ci`. Runs on whichever Node started npm (the
// machine's may be 20; Node 24 arrives with the dependencies), hence plain JavaScript.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

// npm writes this file at the end of every install; older than the lock file = stale install.
const installed = 'node_modules/.package-lock.json';
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync('package-lock.json').mtimeMs) {
  process.stderr.write('dependencies missing or older than package-lock.json: npm ci\n');
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { stdio: 'inherit' });
  process.exit(npm.status ?? 1);
}
