// `kmirror` entry point (`npm run kmirror --`, or `npx kmirror` through cli/bin.js).
import { runCli } from './program.ts';

process.exitCode = await runCli(process.argv);
