#!/usr/bin/env node
// Launcher behind package.json "bin" (`npx kmirror`). The CLI is TypeScript (cli/main.ts) run
// through tsx on the project's pinned Node (the `node` devDependency, >= 24). Under npx, npm puts
// node_modules/.bin first on PATH, so this already is that Node and the CLI runs in-process. Started
// by an older Node (the machine's /usr/bin/node is 20), it re-runs itself on the project's Node,
// passing signals on and exiting with the child's status. Plain JavaScript that Node 20 can parse,
// and nothing is imported before the version check (commander needs Node >= 22.12).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REQUIRED_MAJOR = 24;
const self = fileURLToPath(import.meta.url);
const root = dirname(dirname(self));
const major = Number(process.versions.node.split('.')[0]);

if (major >= REQUIRED_MAJOR) {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig: join(root, 'tsconfig.json') });
  await import(pathToFileURL(join(root, 'cli', 'main.ts')).href);
} else {
  const projectNode = join(root, 'node_modules', '.bin', 'node');
  if (!existsSync(projectNode)) {
    process.stderr.write(
      `error INVALID_CONFIG: kmirror needs Node >= ${REQUIRED_MAJOR} (this is ${process.version}); ` +
        `run \`npm install\` in ${root} to get the pinned one (devDependency "node")\n`,
    );
    process.exit(1);
  }
  // The child runs cli/main.ts itself (not this launcher again), so it cannot loop; tsx is loaded
  // by absolute URL so that any working directory works.
  const tsx = import.meta.resolve('tsx');
  const child = spawn(projectNode, ['--import', tsx, join(root, 'cli', 'main.ts'), ...process.argv.slice(2)], { stdio: 'inherit' });
  // A terminal's Ctrl-C reaches the child directly too; the worker ignores repeats while stopping.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`error INTERNAL: cannot start ${projectNode}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
