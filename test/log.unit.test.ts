import { describe, expect, it } from 'vitest';
import { createLogger, redact, redactString } from '../log.ts';

function capture(level: 'debug' | 'info' | 'warn' | 'error' = 'debug') {
  const lines: string[] = [];
  const log = createLogger({ level, write: (line) => lines.push(line) });
  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, parsed };
}

describe('createLogger', () => {
  it('writes one JSON object per line with time, level and msg first', () => {
    const { log, lines, parsed } = capture();
    log.info('worker running', { taskQueue: 'kmirror' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    const [entry] = parsed();
    expect(Object.keys(entry!).slice(0, 3)).toEqual(['time', 'level', 'msg']);
    expect(entry).toMatchObject({ level: 'info', msg: 'worker running', taskQueue: 'kmirror' });
    expect(Number.isNaN(Date.parse(entry!.time as string))).toBe(false);
  });

  it('drops lines below the level', () => {
    const { log, parsed } = capture('warn');
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(parsed().map((e) => e.level)).toEqual(['warn', 'error']);
  });

  it('child loggers add their fields; a field cannot overwrite time, level or msg', () => {
    const { log, parsed } = capture();
    log.child({ component: 'temporal' }).child({ taskQueue: 'q' }).info('hello', { level: 'bogus', msg: 'x' });
    expect(parsed()[0]).toMatchObject({ level: 'info', msg: 'hello', component: 'temporal', taskQueue: 'q' });
  });

  it('never prints a credential handed to it', () => {
    const { log, lines } = capture();
    const secret = 's3cr3t-Value_42';
    log.info(`connecting to postgres://kmirror:${secret}@db:5432/kmirror`, {
      config: { databaseUrl: `postgres://kmirror:${secret}@db/kmirror`, secretKey: Buffer.from(secret), DEST_SASL_PASSWORD: secret },
      connection: { bootstrap: ['h:1'], sasl: { mechanism: 'plain', username: 'kmirror', password: secret } },
      jaas: `PlainLoginModule required username="broker" password="${secret}";`,
      line: `sasl.jaas.config=... password=${secret};`,
      err: new Error(`login failed, password=${secret}`, { cause: new Error(`token ${secret}`.replace('token ', 'password: ')) }),
    });
    expect(lines.join('')).not.toContain(secret);
    expect(lines.join('')).toContain('[redacted]');
  });
});

describe('redact', () => {
  it('keeps what is not secret', () => {
    expect(redact({ bootstrap: ['127.0.0.1:29092'], username: 'kmirror', offset: 12n, at: new Date(0), n: 1, ok: true })).toEqual({
      bootstrap: ['127.0.0.1:29092'],
      username: 'kmirror',
      offset: '12',
      at: '1970-01-01T00:00:00.000Z',
      n: 1,
      ok: true,
    });
    expect(redactString('postgres://kmirror@127.0.0.1:25432/kmirror')).toBe('postgres://kmirror@127.0.0.1:25432/kmirror');
    expect(redactString('password authentication failed for user "kmirror"')).toBe('password authentication failed for user "kmirror"');
  });

  it('masks the password of a URL and keeps the rest', () => {
    expect(redactString('postgres://u:p%40ss@h:1/db')).toBe('postgres://u:[redacted]@h:1/db');
  });

  it('survives cycles and deep objects', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(redact(a)).toEqual({ name: 'a', self: '[circular]' });
    let deep: Record<string, unknown> = { v: 1 };
    for (let i = 0; i < 10; i++) deep = { deep };
    expect(JSON.stringify(redact(deep))).toContain('[truncated]');
  });

  it('keeps error name, message, code and cause', () => {
    const err = Object.assign(new Error('outer', { cause: new Error('inner') }), { code: 'E1' });
    expect(redact(err)).toEqual({ name: 'Error', message: 'outer', code: 'E1', cause: { name: 'Error', message: 'inner' } });
  });
});
