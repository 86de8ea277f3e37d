// The process logger: one JSON object per line on stderr (stdout stays free for command output),
//   {"time":"<ISO-8601>","level":"info","msg":"…", …fields}
// Every line passes through redact() first, so a credential never reaches a log even when a caller
// hands over a config object, a connection or an error that quotes one (DESIGN 8).

export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  readonly level: LogLevel;
}

export interface LoggerOptions {
  readonly level: LogLevel;
  /** Receives one complete line (with the newline). Default: process.stderr. */
  readonly write?: (line: string) => void;
  readonly fields?: LogFields;
}

const REDACTED = '[redacted]';
/** Field names whose values are secrets wherever they appear (matched case-insensitively). */
const SECRET_KEY = /pass(word|wd)?$|secret|token|credential|api[-_]?key|private[-_]?key|authorization|cookie|jaas|^sasl$/i;
/** user:password@ in URLs (DATABASE_URL may carry one). */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*:)[^@/?#\s]+@/gi;
/** password="…" in JAAS lines and password=… in key=value strings. */
const INLINE_PASSWORD = /(password\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s;,&"']+)/gi;

export function redactString(value: string): string {
  return value.replace(URL_PASSWORD, `$1${REDACTED}@`).replace(INLINE_PASSWORD, `$1${REDACTED}`);
}

/** A JSON-safe copy of `value` with secrets replaced. Errors keep name, message, code and cause. */
export function redact(value: unknown, seen: WeakSet<object> = new WeakSet(), depth = 0): unknown {
  if (typeof value === 'string') return redactString(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return typeof value === 'function' || typeof value === 'symbol' ? undefined : value;
  if (seen.has(value)) return '[circular]';
  if (depth >= 6) return '[truncated]';
  seen.add(value);
  if (Buffer.isBuffer(value)) return `[${value.length} bytes]`;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Error) {
    const err = value as Error & { code?: unknown; cause?: unknown };
    return {
      name: err.name,
      message: redactString(err.message),
      ...(err.code !== undefined ? { code: redact(err.code, seen, depth + 1) } : {}),
      ...(err.cause !== undefined ? { cause: redact(err.cause, seen, depth + 1) } : {}),
    };
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, seen, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? REDACTED : redact(v, seen, depth + 1);
  return out;
}

export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const threshold = logLevels.indexOf(options.level);
  const base = options.fields ?? {};
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (logLevels.indexOf(level) < threshold) return;
    const head = { time: new Date().toISOString(), level, msg: redactString(msg) };
    // The head keys go first and cannot be overwritten by a field of the same name.
    write(`${JSON.stringify(Object.assign({ ...head }, redact({ ...base, ...fields }), head))}\n`);
  };
  return {
    level: options.level,
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}
