// The README's main job end to end: `npm run demo` runs the product through its CLI on the local
// stack — clusters registered, a mirror created and a retention-trimmed topic started through the
// workflows, pause/resume, every partition equal record by record, the history's hash chain
// verified, the workflows' UI links printed — and no secret is printed.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../scripts/stack/topology.ts';
import { stackEnv } from './support/stack.ts';

describe('npm run demo', () => {
  it('mirrors through the workflows with offsets preserved, pauses and resumes, verifies, and prints no secret', () => {
    const run = spawnSync('npm', ['run', '--silent', 'demo'], { cwd: projectRoot, encoding: 'utf8', timeout: 280_000 });
    expect(run.status, run.stderr).toBe(0);
    const out = run.stdout;
    for (const command of ['create', 'start', 'describe', 'pause', 'resume', 'history']) expect(out).toMatch(new RegExp(`^\\$ kmirror ${command} demo-`, 'm'));
    expect(out).toMatch(/^3 partition\(s\): 3 MIRRORING$/m);
    // `describe` while records arrive, then once the writer stopped: the lag reaches 0 (before the pause).
    const beforePause = out.slice(0, out.indexOf('$ kmirror pause'));
    const lags = [...beforePause.matchAll(/^ {2}lag: ([\d,]+) records$/gm)].map((m) => Number(m[1]!.replaceAll(',', '')));
    expect(lags.length).toBeGreaterThanOrEqual(2);
    expect(lags.at(-1)).toBe(0);
    expect(out).toMatch(/^paused 3 partition\(s\) of mirror demo-\S+: 3 PAUSED$/m);
    expect(out).toMatch(/^while paused: .*\(unchanged\)$/m);
    const rows = out.slice(0, out.indexOf('disaster recovery round trip')).split('\n').filter((l) => /^ {2}demo\.orders-\S+-\d: \[/.test(l));
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row).toMatch(/equal \(\d+ records\)/);
    // partition 0 starts at 2500 on both sides (alignment to the source's retention)
    expect(rows[0]).toMatch(/-0: \[2500, /);
    // The disaster-recovery round trip.
    expect(out).toMatch(/^\$ kmirror failover demo-\S+ --all-topics/m);
    expect(out).toMatch(/^\$ kmirror failback demo-\S+ --dry-run$/m);
    expect(out).toMatch(/\[\d+, \d+\): [1-9]\d* records would be archived/);
    expect(out).toMatch(/divergent records archived to demo\.orders-\S+\.kmirror-divergent-\d{8}-\d{6} on the old primary/);
    expect(out).toMatch(/^\$ kmirror promote demo-\S+-reverse --all-topics/m);
    const after = out.slice(out.indexOf('after the round trip')).split('\n').filter((l) => /^ {2}demo\.orders-\S+-\d: \[/.test(l));
    expect(after).toHaveLength(3);
    for (const row of after) expect(row).toMatch(/equal \(\d+ records\)/);
    expect(out).toMatch(/^hash chain intact: \d+ events verified/m);
    expect(out).toMatch(/^ {2}http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\/start%3Ademo-/m);
    expect(out).toMatch(/^worker: running/m);
    const secrets = [stackEnv().DEST_SASL_PASSWORD_FILE!, stackEnv().KMIRROR_SECRET_KEY_FILE!].map((f) => readFileSync(f, 'utf8').trim());
    for (const secret of secrets) expect(out + run.stderr).not.toContain(secret);
  });
});
