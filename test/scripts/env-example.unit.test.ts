// .env.example must document every environment variable that kmirror, its local stack and
// docker-compose.yml read: the names are collected from the code, not listed here.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { endpointNames, projectRoot } from '../../scripts/stack/topology.ts';

/** Folders that are not kmirror's code: dependencies, local state, and the tests (which read the
 *  stack's variables for their own set-up). */
const SKIP = new Set(['node_modules', '.git', '.stack', '.venv', '.cache', 'coverage', 'test']);
/** The platform's own variables, read but not kmirror settings. */
const PLATFORM = new Set(['PATH', 'HOME', 'TMPDIR', 'CI', 'NODE_ENV']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

/** name → where it is read. readVar/requireVar names also accept NAME_FILE, so both must be listed. */
function variablesReadByCode(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of sourceFiles(projectRoot)) {
    const text = readFileSync(file, 'utf8');
    const where = relative(projectRoot, file);
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)\b|\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g)) found.set((m[1] ?? m[2])!, where);
    for (const m of text.matchAll(/\b(?:readVar|requireVar)\(\s*\w+,\s*'([A-Z][A-Z0-9_]+)'/g)) {
      found.set(m[1]!, where);
      found.set(`${m[1]!}_FILE`, where);
    }
  }
  for (const name of endpointNames) found.set(name, 'scripts/stack/topology.ts endpointNames');
  return found;
}

function variablesReadByCompose(): Map<string, string> {
  const text = readFileSync(join(projectRoot, 'docker-compose.yml'), 'utf8');
  const found = new Map<string, string>();
  for (const m of text.matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)) found.set(m[1]!, 'docker-compose.yml ${…}');
  const compose = parse(text) as { secrets?: Record<string, { environment?: string }> };
  for (const secret of Object.values(compose.secrets ?? {})) if (secret.environment) found.set(secret.environment, 'docker-compose.yml secrets');
  return found;
}

/** Names .env.example documents: `NAME=…` lines, commented out or not. */
function documented(): Set<string> {
  const text = readFileSync(join(projectRoot, '.env.example'), 'utf8');
  return new Set([...text.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
}

describe('.env.example', () => {
  const listed = documented();

  it('documents every variable the code reads', () => {
    const read = variablesReadByCode();
    expect(read.size, 'variables found in the code').toBeGreaterThan(15);
    const missing = [...read].filter(([name]) => !listed.has(name) && !PLATFORM.has(name)).map(([name, where]) => `${name} (${where})`);
    expect(missing).toEqual([]);
  });

  it('documents every variable docker-compose.yml reads', () => {
    const missing = [...variablesReadByCompose()].filter(([name]) => !listed.has(name)).map(([name, where]) => `${name} (${where})`);
    expect(missing).toEqual([]);
  });

  it('lists nothing that nothing reads', () => {
    const read = new Set([...variablesReadByCode().keys(), ...variablesReadByCompose().keys()]);
    expect([...listed].filter((name) => !read.has(name))).toEqual([]);
  });

  it('holds no secret values', () => {
    const text = readFileSync(join(projectRoot, '.env.example'), 'utf8');
    for (const m of text.matchAll(/^(?:# )?([A-Z_]*(?:PASSWORD|SECRET_KEY))=(.*)$/gm)) expect(m[2], m[1]).toBe('');
  });
});
