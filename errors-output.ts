// How a process entry point (the CLI, `npm start`) reports a failure. Human form on stderr:
// `error <CODE>: <message>`; with json, one object on stdout: {"error":{"code":"<CODE>","message":"<message>"}}.
// Codes come from domain/errors.ts; anything that is not a KmirrorError is reported as INTERNAL.
// Messages pass through the log redaction, so a credential quoted by a lower layer is not printed.
// Neutral on purpose: worker.ts and cli/ both use it, and neither imports the other's side.
import { isKmirrorError, type ErrorCode } from './domain/errors.ts';
import { redactString } from './log.ts';

export interface ErrorBody {
  readonly code: ErrorCode;
  readonly message: string;
}

export function errorBody(err: unknown): ErrorBody {
  if (isKmirrorError(err)) return { code: err.code, message: redactString(err.message) };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'INTERNAL', message: redactString(message) };
}

export interface Output {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

export const processOutput: Output = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

export function printError(err: unknown, opts: { json: boolean; output?: Output }): void {
  const output = opts.output ?? processOutput;
  const body = errorBody(err);
  if (opts.json) output.stdout(`${JSON.stringify({ error: body })}\n`);
  else output.stderr(`error ${body.code}: ${body.message}\n`);
}
