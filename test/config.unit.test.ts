import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, parseMetrics, withEnvFile } from '../config.ts';
import { isKmirrorError } from '../domain/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'kmirror-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function envFile(text: string): string {
  const file = join(dir, `env-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, text);
  return file;
}

const key = Buffer.alloc(32, 7).toString('base64');

describe('withEnvFile', () => {
  it('adds the file beneath the explicit environment, which wins variable by variable', () => {
    const file = envFile(['TEMPORAL_ADDRESS=127.0.0.1:7233', 'TEMPORAL_TASK_QUEUE=kmirror', 'DATABASE_URL=postgres://stack/db', ''].join('\n'));
    const { env, fromFile } = withEnvFile({ KMIRROR_ENV_FILE: file, TEMPORAL_TASK_QUEUE: 'mine' });
    expect(env.TEMPORAL_TASK_QUEUE).toBe('mine');
    expect(env.TEMPORAL_ADDRESS).toBe('127.0.0.1:7233');
    expect(env.DATABASE_URL).toBe('postgres://stack/db');
    expect([...fromFile].sort()).toEqual(['DATABASE_URL', 'TEMPORAL_ADDRESS']);
  });

  it('treats NAME and NAME_FILE as one setting', () => {
    const secretFile = envFile('from-stack-file');
    const file = envFile(`DEST_SASL_PASSWORD_FILE=${secretFile}\nKMIRROR_SECRET_KEY=${key}\n`);
    // An explicit inline password is not shadowed by the stack's password file, and an explicit
    // key file is not shadowed by an inline key in the env file.
    const { env } = withEnvFile({ KMIRROR_ENV_FILE: file, DEST_SASL_PASSWORD: 'explicit', KMIRROR_SECRET_KEY_FILE: '/explicit/key' });
    expect(env.DEST_SASL_PASSWORD_FILE).toBeUndefined();
    expect(env.KMIRROR_SECRET_KEY).toBeUndefined();
    expect(env.KMIRROR_SECRET_KEY_FILE).toBe('/explicit/key');
  });

  it('feeds loadConfig', () => {
    const file = envFile(`DATABASE_URL=postgres://kmirror@127.0.0.1:25432/kmirror\nKMIRROR_SECRET_KEY=${key}\nTEMPORAL_ADDRESS=10.0.0.1:7233\n`);
    const config = loadConfig(withEnvFile({ KMIRROR_ENV_FILE: file, KMIRROR_LOG_LEVEL: 'debug' }).env);
    expect(config.temporal).toEqual({ address: '10.0.0.1:7233', namespace: 'default', taskQueue: 'kmirror' });
    expect(config.databaseUrl).toBe('postgres://kmirror@127.0.0.1:25432/kmirror');
    expect(config.logLevel).toBe('debug');
    expect(config.secretKey.length).toBe(32);
  });

  it('a DATABASE_URL that is not a postgres:// URL is INVALID_CONFIG, never echoed (it may hold a password)', () => {
    for (const url of ['notaurl', 'mysql://u:s3cret-pw@h/db', 'postgres//u:s3cret-pw@h']) {
      const file = envFile(`DATABASE_URL=${url}\nKMIRROR_SECRET_KEY=${key}\n`);
      let error: unknown;
      try {
        loadConfig(withEnvFile({ KMIRROR_ENV_FILE: file }).env);
      } catch (err) {
        error = err;
      }
      expect(error).toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('DATABASE_URL is not a postgres:// URL') });
      expect((error as Error).message).not.toContain('s3cret-pw');
    }
  });

  it('/dev/null reads nothing, and leaves the environment alone', () => {
    const explicit = { KMIRROR_ENV_FILE: '/dev/null', TEMPORAL_ADDRESS: 'x:1' };
    const { env, fromFile } = withEnvFile(explicit);
    expect(env).toEqual(explicit);
    expect(fromFile).toEqual([]);
  });

  it('a KMIRROR_ENV_FILE that cannot be read is INVALID_CONFIG naming the file', () => {
    const missing = join(dir, 'missing.env');
    let caught: unknown;
    try {
      withEnvFile({ KMIRROR_ENV_FILE: missing });
    } catch (err) {
      caught = err;
    }
    expect(isKmirrorError(caught, 'INVALID_CONFIG')).toBe(true);
    expect((caught as Error).message).toContain(missing);
  });
});

describe('parseMetrics', () => {
  it('serves on loopback port 9464 with lagging partition series by default; port 0 turns it off', () => {
    expect(parseMetrics({})).toEqual({ host: '127.0.0.1', port: 9464, partitionSeries: 'lagging' });
    expect(parseMetrics({ KMIRROR_METRICS_PORT: '0', KMIRROR_METRICS_HOST: '0.0.0.0', KMIRROR_METRICS_PARTITION_SERIES: 'all' })).toEqual({ host: '0.0.0.0', port: 0, partitionSeries: 'all' });
  });

  it.each([
    [{ KMIRROR_METRICS_PORT: '70000' }, /KMIRROR_METRICS_PORT='70000'/],
    [{ KMIRROR_METRICS_PORT: 'x' }, /KMIRROR_METRICS_PORT='x'/],
    [{ KMIRROR_METRICS_PARTITION_SERIES: 'some' }, /KMIRROR_METRICS_PARTITION_SERIES='some' is not one of lagging, all/],
  ])('refuses %o with INVALID_CONFIG', (env, message) => {
    let caught: unknown;
    try {
      parseMetrics(env);
    } catch (err) {
      caught = err;
    }
    expect(isKmirrorError(caught, 'INVALID_CONFIG')).toBe(true);
    expect((caught as Error).message).toMatch(message);
  });
});
