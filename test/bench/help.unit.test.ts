// Every benchmark's --help (its header comment, bench/support/args.ts) names each option it takes.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headerComment } from '../../bench/support/args.ts';

const benchDir = join(import.meta.dirname, '../../bench');
const benchmarks = readdirSync(benchDir).filter((f) => f.endsWith('.ts') && f !== 'run.ts');

/** The option names of a benchmark's benchArgs({ options: { … } }) call. */
function optionNames(source: string): string[] {
  const start = source.indexOf('benchArgs(import.meta.url, {');
  if (start < 0) return [];
  const end = source.indexOf('});', start);
  return [...source.slice(start, end).matchAll(/'?([a-z0-9-]+)'?: \{ type: /g)].map((m) => m[1]!);
}

describe('benchmark --help', () => {
  it.each(benchmarks)('%s documents every option in its header and parses them with benchArgs', (file) => {
    const source = readFileSync(join(benchDir, file), 'utf8');
    expect(source, 'options parsed by bench/support/args.ts benchArgs (which serves --help)').not.toMatch(/\bparseArgs\(/);
    const names = optionNames(source);
    const documented = headerComment(source);
    expect(names.filter((name) => !documented.includes(`--${name}`))).toEqual([]);
  });
});
