// Determinism against recorded histories (STYLE 16): each test/workflows/histories/*.json (written
// by scripts/record-histories.ts from the replay scenario) replayed against workflows/ as the
// worker bundles them. A workflow change that reorders, adds or drops commands an execution
// already recorded fails here, naming the file: guard the change with patched(), or re-record when
// no execution of the old code can still be running. No server is needed (int tier: bundling the
// workflows takes seconds).
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { historyFromJSON, replayFailures, replayHistories, SCENARIO_WORKFLOW_TYPES } from '../support/replay-scenario.ts';

// The bundler's and replay worker's INFO logs are noise here (the core's warning about a failed
// replay still shows; the assertion below names the file).
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // installed already by another test file in this process
}

const dir = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('recorded workflow histories', () => {
  it('cover every workflow type of the scenario', () => {
    expect(new Set(files.map((f) => f.replace(/-\d+\.json$/, '')))).toEqual(new Set(SCENARIO_WORKFLOW_TYPES));
  });

  it('each replays against the current workflows without a nondeterminism error', async () => {
    const results = await replayHistories(files.map((f) => ({ workflowId: f, history: historyFromJSON(JSON.parse(readFileSync(join(dir, f), 'utf8'))) })));
    expect(results.map((r) => r.workflowId)).toEqual(files);
    expect(replayFailures(results)).toEqual([]);
  });
});
