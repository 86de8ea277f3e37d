// Record the workflow histories the recorded replay test checks (STYLE 16): runs the replay
// scenario (test/support/replay-scenario.ts) on the local stack, then writes each execution of its
// task queue as test/workflows/histories/<workflowType>-<n>.json (n counts from 1 in start order),
// in the JSON format of the Temporal CLI and UI (historyToJSON); earlier recordings there
// are replaced. Failure stack traces name files relative to the project (the replay never reads
// them; the recording should not name this machine's paths). A history containing one of the
// stack's secrets (decoded payloads included) is not written (STYLE 8).
//   npx tsx scripts/stack.ts up && npx tsx scripts/record-histories.ts
// Re-record after an intended change of the workflows' commands, once the histories recorded
// before it no longer matter (no execution of the old code is still running); otherwise patch.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot, stackDir } from '../config.ts';
import { controlPlane } from '../test/support/control-plane.ts';
import { historyToJSON, recordExecutions, runReplayScenario } from '../test/support/replay-scenario.ts';

const outDir = join(projectRoot, 'test', 'workflows', 'histories');

/** Every string in `json`, base64 ones (payload data, header fields) also decoded. */
function* strings(value: unknown): Generator<string> {
  if (typeof value === 'string') {
    yield value;
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0) yield Buffer.from(value, 'base64').toString('utf8');
  } else if (Array.isArray(value)) {
    for (const v of value) yield* strings(v);
  } else if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) yield* strings(v);
  }
}

/** `value` with the project root cut from every failure's stack trace. */
function relativeStackTraces(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relativeStackTraces);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, k === 'stackTrace' && typeof v === 'string' ? v.replaceAll(`${projectRoot}/`, '') : relativeStackTraces(v)]),
  );
}

const t = await controlPlane();
try {
  const secretsDir = join(stackDir, 'secrets');
  const secrets = [
    ...readdirSync(secretsDir).map((f) => readFileSync(join(secretsDir, f), 'utf8').trim()),
    t.config.secretKey.toString('base64'),
    t.config.secretKey.toString('hex'),
  ].filter((s) => s.length >= 8);

  const run = await runReplayScenario(t);
  const executions = await recordExecutions(t, run.workflowIds);
  const files = new Map<string, string>();
  const counts = new Map<string, number>();
  for (const e of executions) {
    const n = (counts.get(e.workflowType) ?? 0) + 1;
    counts.set(e.workflowType, n);
    const parsed = relativeStackTraces(JSON.parse(historyToJSON(e.history)));
    const json = JSON.stringify(parsed, null, 2);
    for (const s of strings(parsed)) {
      if (secrets.some((secret) => s.includes(secret))) throw new Error(`the history of ${e.workflowId} contains one of the stack's secrets; nothing written`);
    }
    files.set(`${e.workflowType}-${n}.json`, `${json}\n`);
  }
  mkdirSync(outDir, { recursive: true });
  for (const f of readdirSync(outDir)) if (f.endsWith('.json')) rmSync(join(outDir, f));
  for (const [name, json] of files) {
    writeFileSync(join(outDir, name), json);
    console.log(`${name}\t${Buffer.byteLength(json)} bytes`);
  }
} finally {
  await t.close();
}
