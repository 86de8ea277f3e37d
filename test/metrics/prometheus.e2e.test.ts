// The worker's metrics as an operator watches them: a real worker process (`node worker.ts`, as
// `npm start` runs it) serves /metrics, the local stack's Prometheus (Debian's, started by `stack
// up`) scrapes it, and PromQL answers. The destination throttles kmirror's writes with a client
// quota (producer_byte_rate for client id `kmirror`, a throttled destination as operators meet
// them), so the mirror falls behind a steady writer and the lag is seen going to 0 once it stops.
// `kmirror describe` and /metrics agree on the lag, and the alert rules load.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readVar } from '../../config.ts';
import type { DescribedMirror } from '../../cli/commands/mirrors.ts';
import { dashboard } from '../../ops/grafana-dashboard.ts';
import { clientProperties, kafkaJava } from '../../scripts/stack/kafka.ts';
import { ALERT_RULES_FILE, addScrapeTarget, prometheusUrl, removeScrapeTarget } from '../../scripts/stack/prometheus.ts';
import { start, type Child } from '../support/child.ts';
import { controlPlane, operationsOn, type ControlPlane } from '../support/control-plane.ts';
import { messages, sendAll } from '../support/mirror-fixture.ts';
import { closedPort, destConnection, randomName, stackConfigEnv, stackEnv } from '../support/stack.ts';
import { scrapeWorker } from '../support/exposition.ts';

const PARTITIONS = 3;
/** Written at ~400 KiB/s for 10 s (20 records of 1 KiB every 50 ms) while the mirror runs. */
const RECORDS = 4_000;
const PER_TICK = 20;
const VALUE_BYTES = 1_024;
/** 100 KiB/s. A quota is a rate over 10 s windows, so the first MiB goes at full speed; then the
 *  mirror falls behind the writer, and catches up ~20 s after it stops. (With 2,000 records it
 *  caught up ~10 s after, and a fresh-clone run once read describe's lag as 0 already: the reads
 *  below happen 5.5 s after the writer stops plus a CLI start.) */
const QUOTA = 'producer_byte_rate=102400';

let t: ControlPlane;
let env: Record<string, string>;
let worker: Child | undefined;
let metricsPort: number;
const target = randomName('metrics');
const { run } = operationsOn(() => t);

/** kafka-configs (Kafka's ConfigCommand) against the destination, for the client id `kmirror`. */
function destClientQuota(change: ['--add-config' | '--delete-config', string]): void {
  const config = clientProperties('metrics-test-dest', destConnection());
  const java = kafkaJava('kafka.admin.ConfigCommand', ['--bootstrap-server', destConnection().bootstrap.join(','), '--command-config', config, '--alter', '--entity-type', 'clients', '--entity-name', 'kmirror', ...change], '256m');
  const result = spawnSync(java.command, java.args, { encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`ConfigCommand ${change.join(' ')} failed: ${result.stdout}${result.stderr}`);
}

/** Instant query: the samples' values by their labels' JSON. */
async function promQuery(query: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query })}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  expect(body.status).toBe('success');
  return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
}

async function promRange(query: string, from: number, to: number): Promise<number[]> {
  const res = await fetch(`${prometheusUrl}/api/v1/query_range?${new URLSearchParams({ query, start: String(from / 1000), end: String(to / 1000), step: '1' })}`);
  const body = (await res.json()) as { status: string; data: { result: { values: [number, string][] }[] } };
  expect(body.status).toBe('success');
  return (body.data.result[0]?.values ?? []).map(([, v]) => Number(v));
}

/** The worker's own /metrics, parsed: `name{labels}` → value. */
const scrape = () => scrapeWorker(metricsPort);

function cli(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = start(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], { env });
  return child.exited.then(({ code }) => ({ code, stdout: child.stdout() }));
}

beforeAll(async () => {
  t = await controlPlane({ withWorker: false });
  metricsPort = await closedPort();
  env = {
    ...stackConfigEnv({ DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.taskQueue, KMIRROR_LOG_LEVEL: 'info', KMIRROR_METRICS_PORT: String(metricsPort), KMIRROR_GROUP_SYNC_INTERVAL_MS: '1000' }),
    KMIRROR_ENV_FILE: '/dev/null',
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
  };
  worker = start(process.execPath, ['--import', 'tsx', 'worker.ts'], { env });
  const served = await worker.waitForLog((e) => e.msg === 'metrics served', 60_000);
  expect(served.url).toBe(`http://127.0.0.1:${metricsPort}/metrics`);
  await worker.waitForLog((e) => e.msg === 'worker running', 60_000);
  addScrapeTarget(target, `127.0.0.1:${metricsPort}`);
});

afterAll(async () => {
  removeScrapeTarget(target);
  try {
    destClientQuota(['--delete-config', 'producer_byte_rate']);
  } catch {
    // not set (the test failed before it)
  }
  if (worker !== undefined) {
    worker.process.kill('SIGTERM');
    await worker.exited;
  }
  await t?.close();
});

describe('metrics', () => {
  it('Prometheus scrapes the worker while a mirror runs: the lag goes to 0, and describe agrees with /metrics', async () => {
    // Prometheus picks the new target file up by itself (file service discovery).
    await expect.poll(async () => (await promQuery(`up{worker="${target}"}`))[0]?.value, { timeout: 30_000, interval: 500 }).toBe(1);
    const began = Date.now();
    const mirror = randomName('metrics');
    const topic = await t.sourceTopic({ partitions: PARTITIONS });
    destClientQuota(['--add-config', QUOTA]);
    try {
      await run('createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst' });
      await run('startTopics', { mirror, topics: [topic] });
      const lagSeries = `kmirror_topic_lag_records{mirror="${mirror}",topic="${topic}"}`;
      const producer = t.sourceKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      for (let sent = 0; sent < RECORDS; sent += PER_TICK) {
        await sendAll(producer, topic, messages(PER_TICK, PARTITIONS, { from: sent, valueBytes: VALUE_BYTES }));
        await sleep(50);
      }
      await producer.disconnect();

      // The writer has stopped and the mirror is behind. Once a lag sample (every 5 s) has seen
      // the writer's last records, /metrics (m1) and then describe (d) are read: the lag only
      // falls now, and /metrics counts from what the destination acknowledged, describe from what
      // it holds, so m1 ≥ d > 0; both count from the same source end.
      const sourceEnd = [...(await t.source.listOffsets(topic, [0, 1, 2], 'latest')).values()].reduce((a, b) => a + b, 0n);
      expect(sourceEnd).toBe(BigInt(RECORDS));
      await sleep(5_500);
      const m1 = (await scrape()).samples.get(lagSeries)!;
      const described = await cli(['describe', mirror, '--json']);
      expect(described.code).toBe(0);
      const partitions = (JSON.parse(described.stdout) as DescribedMirror).partitions;
      const d = partitions.reduce((n, p) => n + Number(p.lag), 0);
      expect(m1).toBeGreaterThan(0);
      expect(d).toBeGreaterThan(0);
      expect(d).toBeLessThanOrEqual(m1);
      // describe's source end is the LSO the metrics sampled
      expect(partitions.reduce((n, p) => n + Number(p.sourceEndOffset), 0)).toBe(RECORDS);

      // Prometheus: the lag series goes to 0 (records and seconds), after having been above it.
      await expect.poll(async () => (await promQuery(lagSeries))[0]?.value, { timeout: 60_000, interval: 1_000 }).toBe(0);
      await sleep(3_000); // a scrape later: the range's last step sees the 0 too
      const records = await promRange(lagSeries, began, Date.now());
      expect(Math.max(...records)).toBeGreaterThan(0);
      expect(records[records.length - 1]).toBe(0);
      const seconds = await promRange(`kmirror_topic_lag_seconds{mirror="${mirror}"}`, began, Date.now());
      expect(Math.max(...seconds)).toBeGreaterThan(0);
      await expect.poll(async () => (await promQuery(`kmirror_topic_lag_seconds{mirror="${mirror}"}`))[0]?.value, { timeout: 10_000, interval: 1_000 }).toBe(0);

      // …and describe reads 0 too.
      const after = JSON.parse((await cli(['describe', mirror, '--json'])).stdout) as DescribedMirror;
      expect(after.partitions.map((p) => p.lag)).toEqual(['0', '0', '0']);
    } finally {
      destClientQuota(['--delete-config', 'producer_byte_rate']);
    }

    // The other series an operator's dashboard reads.
    await expect.poll(async () => (await promQuery(`kmirror_mirrored_records_total{mirror="${mirror}"}`))[0]?.value, { timeout: 10_000, interval: 1_000 }).toBe(RECORDS);
    expect(await promQuery(`max by (state) (kmirror_partitions{mirror="${mirror}"})`)).toEqual([{ metric: { state: 'MIRRORING' }, value: PARTITIONS }]);
    const operations = await promQuery(`kmirror_operation_duration_seconds_count{worker="${target}"}`);
    expect(operations.map((o) => `${o.metric.operation}:${o.metric.outcome}`).sort()).toEqual(['createMirror:completed', 'startTopics:completed']);
    await expect.poll(async () => (await promQuery(`kmirror_group_sync_last_success_timestamp_seconds{mirror="${mirror}"}`))[0]?.value ?? 0, { timeout: 15_000, interval: 1_000 }).toBeGreaterThan(began / 1000);
    expect((await promQuery(`kmirror_byte_budget_capacity_bytes{worker="${target}"}`))[0]?.value).toBe(t.config.dataPlane.budgetBytes);
    expect((await promQuery(`kmirror_copy_partitions{mirror="${mirror}"}`))[0]?.value).toBe(PARTITIONS);

    // No credential in what the worker serves.
    const { text } = await scrape();
    const secrets = [readVar(stackEnv(), 'DEST_SASL_PASSWORD')!, readFileSync(stackEnv().KMIRROR_SECRET_KEY_FILE!, 'utf8').trim()];
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
  });

  it('every query of the Grafana dashboard runs in Prometheus, and its lag, throughput and state panels find series', async () => {
    const panels = (dashboard.panels ?? []).flatMap((p) => ('targets' in p && p.targets !== undefined ? p.targets.map((t) => ({ title: p.title ?? '', expr: String((t as { expr?: string }).expr) })) : []));
    // Grafana's variables as Grafana would fill them: every mirror, a 1-minute rate window, the last hour.
    const filled = panels.map((p) => ({ ...p, expr: p.expr.replaceAll('$mirror', '.*').replaceAll('$__rate_interval', '1m').replaceAll('$__range', '1h') }));
    const answered = new Map<string, number>();
    for (const { title, expr } of filled) {
      const res = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result: unknown[] } };
      expect(body.status, `${title}: ${expr}: ${body.error ?? ''}`).toBe('success');
      answered.set(title, Math.max(answered.get(title) ?? 0, body.data!.result.length));
    }
    for (const title of ['Lag per topic (records)', 'Lag per topic (age of the oldest unmirrored record)', 'Bytes mirrored per second', 'Partitions per state', 'Byte budget in use', 'Since the last group-offset sync']) {
      expect(answered.get(title), title).toBeGreaterThan(0);
    }
  });

  it('the alert rules are valid and loaded by Prometheus', async () => {
    const check = spawnSync('promtool', ['check', 'rules', ALERT_RULES_FILE], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    const res = await fetch(`${prometheusUrl}/api/v1/rules?type=alert`);
    const body = (await res.json()) as { data: { groups: { name: string; rules: { name: string; health: string }[] }[] } };
    const kmirror = body.data.groups.find((g) => g.name === 'kmirror');
    expect(kmirror?.rules.map((r) => r.name).sort()).toEqual(['KmirrorGroupSyncStale', 'KmirrorLagGrowing', 'KmirrorLeaseFlapping', 'KmirrorPartitionFailed', 'KmirrorRecordsLost', 'KmirrorTopicSyncStale', 'KmirrorWorkerDown']);
    expect(kmirror?.rules.every((r) => r.health !== 'err')).toBe(true);
  });
});
