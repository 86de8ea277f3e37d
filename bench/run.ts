// `npm run bench -- <name> [args…]` runs bench/<name>.ts. Each benchmark prints `RESULT name=value
// unit` lines, ends with its headline ratio or rate, and is recorded in docs/benchmarks.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3));
const [name, ...args] = process.argv.slice(2);
if (name === undefined || name === '--help' || !existsSync(join(here, `${name}.ts`))) {
  process.stderr.write(`usage: npm run bench -- <name> [args…]   (npm run bench -- <name> --help: its scenario and options)\nbenchmarks: ${available.join(', ')}\n`);
  process.exit(name === undefined || name === '--help' ? 0 : 2);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', join(here, `${name}.ts`), ...args], { stdio: 'inherit' });
process.exit(result.status ?? 1);
