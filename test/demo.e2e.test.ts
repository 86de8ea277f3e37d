// The README's main job end to end: `npm run demo` on the local stack mirrors a topic whose head
// retention removed, and every partition compares equal record by record.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../scripts/stack/topology.ts';

describe('npm run demo', () => {
  it('mirrors with offsets preserved, verifies, and prints the endpoints without secrets', () => {
    const run = spawnSync('npm', ['run', '--silent', 'demo'], { cwd: projectRoot, encoding: 'utf8', timeout: 240_000 });
    expect(run.status, run.stderr).toBe(0);
    const rows = run.stdout.split('\n').filter((l) => /^\d+\s+\[/.test(l));
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row).toMatch(/equal \(\d+ records\)/);
    // partition 0 starts at 2500 on both sides (alignment)
    expect(rows[0]).toMatch(/^0\s+\[2500, 10000\)\s+\[2500, 10000\)/);
    expect(run.stdout).toMatch(/^TEMPORAL_UI_URL=http:\/\/127\.0\.0\.1:8233$/m);
    expect(run.stdout).toMatch(/^worker: running/m);
    expect(run.stdout).not.toMatch(/PASSWORD=|SECRET_KEY=/);
  });
});
