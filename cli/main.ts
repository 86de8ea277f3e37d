// `kmirror` entry point (`npm run kmirror --`, or `npx kmirror` through cli/bin.js).
import { runCli } from './program.ts';

// A reader that stops early (`kmirror describe x | head`) closes the pipe: that is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

process.exitCode = await runCli(process.argv);
