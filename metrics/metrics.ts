// The worker's Prometheus metrics (prom-client), served on KMIRROR_METRICS_HOST:KMIRROR_METRICS_PORT
// at /metrics (docs/metrics.md lists every series; ops/ has the Grafana dashboard and alert rules).
//
// What reports what: copy activities report their partitions' lag and the copier's counts
// (copyReporter); the group-sync activity its results; leases their takeovers; operation workflows
// their duration through a sink (workflows/interceptors.ts); partition states are read from the
// projections at scrape time. Every worker serves the same states (one database): aggregate them
// with max by (mirror, state), not sum.
//
// Cardinality: lag is exported per topic always, and per partition only for partitions that are
// behind (records > 0) — a mirror of thousands of caught-up partitions adds no per-partition series
// — unless KMIRROR_METRICS_PARTITION_SERIES=all. Counters are per mirror.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ByteBudget } from '../kafka/budget.ts';
import { partitionKey, type CopyStats, type PartitionProgress } from '../kafka/copier.ts';
import type { GroupSyncSummary } from '../kafka/group-offsets.ts';
import type { Logger } from '../log.ts';

/** Which partitions get lag series of their own: those behind, or all being copied. */
export type PartitionSeries = 'lagging' | 'all';

export interface MetricsOptions {
  readonly partitionSeries: PartitionSeries;
  /** The worker's byte budget (used / capacity gauges). */
  readonly budget?: ByteBudget;
  /** Partitions per mirror and state, read at scrape time (the projections). */
  readonly partitionStates?: () => Promise<readonly { readonly mirror: string; readonly state: string; readonly count: number }[]>;
  /** Told when partitionStates fails (the scrape goes on without those series). */
  readonly log?: Logger;
}

export type OperationOutcome = 'completed' | 'failed' | 'cancelled';

/** One partition as its copy last reported it. */
interface Lag {
  readonly topic: string;
  readonly partition: number;
  /** The destination end the copier has had acknowledged. */
  next: bigint;
  /** The newest source LSO known: from the copier's fetches, or sampled (sourceEnds). */
  sourceEnd: bigint;
  /** Timestamp (ms) of the first record the copier's latest fetch returned, while it is behind. */
  fetchedMs?: number;
  /** When the copier last had everything it had seen (ms): every record unmirrored now came later. */
  caughtUpAt?: number;
}

const lagRecords = (lag: Lag): bigint => (lag.sourceEnd > lag.next ? lag.sourceEnd - lag.next : 0n);

/** The copier counts turned into counters (CopyStats field → metric). */
const COUNTED = {
  records: 'records',
  bytes: 'bytes',
  reencodedBatches: 'reencoded',
  fillerRecords: 'fillers',
  mergedBatches: 'merged',
  resyncs: 'resyncs',
} as const satisfies Partial<Record<keyof CopyStats, string>>;

export class Metrics {
  readonly registry = new Registry();
  /** mirror → copy reporter id → partition key → lag. A partition is in one copy at a time. */
  private readonly lags = new Map<string, Map<number, Map<string, Lag>>>();
  private nextCopy = 0;
  private readonly counters: Record<(typeof COUNTED)[keyof typeof COUNTED], Counter<'mirror'>>;
  private readonly leaseTakeovers: Counter<'mirror'>;
  private readonly leasesLost: Counter<'mirror'>;
  private readonly recordsLostCounter: Counter<'mirror'>;
  private readonly groupSyncGroups: Counter<'mirror' | 'result'>;
  private readonly groupSyncClamped: Counter<'mirror'>;
  private readonly groupSyncFailures: Counter<'mirror'>;
  private readonly groupSyncLast: Gauge<'mirror'>;
  private readonly topicSyncChanges: Counter<'mirror' | 'sync'>;
  private readonly topicSyncFailures: Counter<'mirror' | 'sync'>;
  private readonly topicSyncLast: Gauge<'mirror' | 'sync'>;
  private readonly topicAclChanges: Counter<'mirror' | 'change'>;
  private readonly operations: Histogram<'operation' | 'outcome'>;

  constructor(private readonly options: MetricsOptions) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'kmirror_' });
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['mirror'] as const, registers });
    this.counters = {
      records: counter('kmirror_mirrored_records_total', 'Source records acknowledged by the destination.'),
      bytes: counter('kmirror_mirrored_bytes_total', 'Bytes of source batches acknowledged by the destination (as fetched).'),
      reencoded: counter('kmirror_reencoded_batches_total', 'Batches re-encoded record by record (compaction holes, LogAppendTime, a partial head).'),
      fillers: counter('kmirror_filler_records_total', 'Filler records written for alignment and for offsets the source skips (transaction markers, compaction).'),
      merged: counter('kmirror_merged_batches_total', 'Small source batches that went out merged with others.'),
      resyncs: counter('kmirror_copier_resyncs_total', 'Times a copier re-read destination positions after an error.'),
    };
    this.recordsLostCounter = counter('kmirror_records_lost_total', "Records the source's retention removed before they were mirrored, recorded and moved past (policy continue, or an accepted loss).");
    this.leaseTakeovers = counter('kmirror_lease_takeovers_total', 'Partition leases taken over from an owner whose lease had expired (a worker died or lost Postgres).');
    this.leasesLost = counter('kmirror_leases_lost_total', 'Copies that stopped because their lease was taken by another owner.');
    this.groupSyncGroups = new Counter({ name: 'kmirror_group_sync_groups_total', help: 'Consumer groups seen by group-offset sync, by result.', labelNames: ['mirror', 'result'] as const, registers });
    this.groupSyncClamped = counter('kmirror_group_sync_clamped_partitions_total', 'Group offsets clamped to what was mirrored (never beyond the destination end).');
    this.groupSyncFailures = counter('kmirror_group_sync_failures_total', 'Group-offset sync rounds that failed.');
    this.groupSyncLast = new Gauge({ name: 'kmirror_group_sync_last_success_timestamp_seconds', help: 'When group-offset sync last completed (Unix time).', labelNames: ['mirror'] as const, registers });
    this.topicSyncChanges = new Counter({ name: 'kmirror_topic_sync_changes_total', help: 'Mirror topics whose configs or ACLs a sync round changed on the destination (each one an event).', labelNames: ['mirror', 'sync'] as const, registers });
    this.topicSyncFailures = new Counter({ name: 'kmirror_topic_sync_failures_total', help: 'Config or ACL sync: topics left out of a round, and rounds that failed as a whole.', labelNames: ['mirror', 'sync'] as const, registers });
    this.topicSyncLast = new Gauge({ name: 'kmirror_topic_sync_last_success_timestamp_seconds', help: 'When a config or ACL sync round last completed with no topic left out (Unix time).', labelNames: ['mirror', 'sync'] as const, registers });
    this.topicAclChanges = new Counter({ name: 'kmirror_topic_acl_changes_total', help: 'ACLs changed on mirror topics: granted and revoked by ACL sync, principals denied writing by the read-only guard.', labelNames: ['mirror', 'change'] as const, registers });
    this.operations = new Histogram({
      name: 'kmirror_operation_duration_seconds',
      help: 'Operation workflows (create, start, pause, failover, …) from start to end, by outcome.',
      labelNames: ['operation', 'outcome'] as const,
      buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    });
    this.lagGauges(registers);
    const { budget, partitionStates } = options;
    if (budget !== undefined) {
      new Gauge({ name: 'kmirror_byte_budget_used_bytes', help: 'Bytes fetched and not yet acknowledged by the destination, all copies of this worker.', registers, collect() { this.set(budget.inUse); } });
      new Gauge({ name: 'kmirror_byte_budget_capacity_bytes', help: 'The byte budget (KMIRROR_BUDGET_BYTES).', registers, collect() { this.set(budget.capacity); } });
    }
    if (partitionStates !== undefined) {
      const log = options.log;
      new Gauge({
        name: 'kmirror_partitions',
        help: 'Partitions per mirror and lifecycle state (from the shared database: every worker reports the same; use max by (mirror, state)).',
        labelNames: ['mirror', 'state'] as const,
        registers,
        async collect() {
          this.reset();
          try {
            for (const row of await partitionStates()) this.set({ mirror: row.mirror, state: row.state }, row.count);
          } catch (err) {
            log?.warn('metrics: reading partition states failed', { error: (err as Error).message });
          }
        },
      });
    }
  }

  /** Lag gauges, computed from the copies' last reports at scrape time. */
  private lagGauges(registers: Registry[]): void {
    const each = (fn: (mirror: string, lag: Lag) => void): void => {
      for (const [mirror, copies] of this.lags) for (const partitions of copies.values()) for (const lag of partitions.values()) fn(mirror, lag);
    };
    // An upper bound of the oldest unmirrored record's age: from the first record fetched, or from
    // when the copier was last caught up, whichever is more recent. Unknown (undefined) while a
    // partition is behind and neither is known (a copy that started behind, before its first fetch).
    const seconds = (lag: Lag, now: number): number | undefined => {
      if (lagRecords(lag) === 0n) return 0;
      const since = Math.max(lag.fetchedMs ?? -Infinity, lag.caughtUpAt ?? -Infinity);
      return since === -Infinity ? undefined : Math.max(0, (now - since) / 1000);
    };
    const all = this.options.partitionSeries === 'all';
    new Gauge({
      name: 'kmirror_topic_lag_records',
      help: 'Records behind the source (source last stable offset − destination end), summed over the topic\'s partitions being copied.',
      labelNames: ['mirror', 'topic'] as const,
      registers,
      collect() {
        this.reset();
        each((mirror, lag) => this.inc({ mirror, topic: lag.topic }, Number(lagRecords(lag))));
      },
    });
    new Gauge({
      name: 'kmirror_topic_lag_seconds',
      help: 'Age of the oldest unmirrored record of the topic (an upper bound, like MirrorMaker\'s record-age-ms); 0 when caught up. Absent while a partition is behind and none of its records has been fetched yet (age unknown).',
      labelNames: ['mirror', 'topic'] as const,
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        // A topic with a partition of unknown age is left out: its age is not known either.
        const max = new Map<string, { mirror: string; topic: string; value: number | undefined }>();
        each((mirror, lag) => {
          const key = `${mirror}\u0000${lag.topic}`;
          const value = seconds(lag, now);
          const known = max.get(key);
          if (known === undefined) max.set(key, { mirror, topic: lag.topic, value });
          else if (known.value !== undefined) known.value = value === undefined ? undefined : Math.max(known.value, value);
        });
        for (const { mirror, topic, value } of max.values()) if (value !== undefined) this.set({ mirror, topic }, value);
      },
    });
    new Gauge({
      name: 'kmirror_partition_lag_records',
      help: `Records behind the source per partition (${all ? 'every partition being copied' : 'only partitions that are behind'}; KMIRROR_METRICS_PARTITION_SERIES).`,
      labelNames: ['mirror', 'topic', 'partition'] as const,
      registers,
      collect() {
        this.reset();
        each((mirror, lag) => {
          const records = lagRecords(lag);
          if (all || records > 0n) this.set({ mirror, topic: lag.topic, partition: String(lag.partition) }, Number(records));
        });
      },
    });
    new Gauge({
      name: 'kmirror_partition_lag_seconds',
      help: 'Age of the oldest unmirrored record per partition (same selection as kmirror_partition_lag_records).',
      labelNames: ['mirror', 'topic', 'partition'] as const,
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        each((mirror, lag) => {
          const value = seconds(lag, now);
          if ((all || lagRecords(lag) > 0n) && value !== undefined) this.set({ mirror, topic: lag.topic, partition: String(lag.partition) }, value);
        });
      },
    });
    const lags = this.lags;
    new Gauge({
      name: 'kmirror_copy_partitions',
      help: 'Partitions this worker is copying now.',
      labelNames: ['mirror'] as const,
      registers,
      collect() {
        this.reset();
        for (const [mirror, copies] of lags) this.set({ mirror }, [...copies.values()].reduce((n, p) => n + p.size, 0));
      },
    });
  }

  /**
   * What one copy activity reports: progress(…) after every copier round (positions, and the
   * counts since its last report); sourceEnds(…) the source LSOs it samples on its own (keyed by
   * partitionKey) — a copier stuck on a slow or unreachable destination reports no round, and
   * its last fetch's LSO would understate the lag; end() when it stops (its partitions' lag
   * series go away: the next copy of them reports afresh).
   */
  copyReporter(mirror: string): {
    progress(progress: readonly PartitionProgress[], stats: Readonly<CopyStats>): void;
    sourceEnds(ends: ReadonlyMap<string, bigint>): void;
    end(): void;
  } {
    const id = this.nextCopy++;
    const copies = this.lags.get(mirror) ?? new Map<number, Map<string, Lag>>();
    this.lags.set(mirror, copies);
    const mine = new Map<string, Lag>();
    copies.set(id, mine);
    const last: Partial<Record<keyof typeof COUNTED, number>> = {};
    return {
      progress: (progress, stats) => {
        const now = Date.now();
        for (const p of progress) {
          const key = partitionKey(p.topic, p.partition);
          if (p.status === 'failed' || p.status === 'stopped') {
            mine.delete(key);
            continue;
          }
          const lag = mine.get(key) ?? { topic: p.topic, partition: p.partition, next: 0n, sourceEnd: 0n };
          lag.next = p.nextOffset;
          if (p.sourceEnd > lag.sourceEnd) lag.sourceEnd = p.sourceEnd;
          if (p.nextOffset >= p.sourceEnd) lag.caughtUpAt = now;
          if (p.oldestUnmirroredMs === undefined) delete lag.fetchedMs;
          else lag.fetchedMs = p.oldestUnmirroredMs;
          mine.set(key, lag);
        }
        for (const [field, name] of Object.entries(COUNTED) as [keyof typeof COUNTED, (typeof COUNTED)[keyof typeof COUNTED]][]) {
          const delta = stats[field] - (last[field] ?? 0);
          if (delta > 0) this.counters[name].inc({ mirror }, delta);
          last[field] = stats[field];
        }
      },
      sourceEnds: (ends) => {
        for (const [key, end] of ends) {
          const lag = mine.get(key);
          if (lag !== undefined && end > lag.sourceEnd) lag.sourceEnd = end;
        }
      },
      end: () => {
        copies.delete(id);
        if (copies.size === 0) this.lags.delete(mirror);
      },
    };
  }

  leaseTakenOver(mirror: string, partitions: number): void {
    if (partitions > 0) this.leaseTakeovers.inc({ mirror }, partitions);
  }

  /** Records lost to source retention that a copy recorded and moved past. */
  recordsLost(mirror: string, records: bigint): void {
    this.recordsLostCounter.inc({ mirror }, Number(records));
  }

  leaseLost(mirror: string): void {
    this.leasesLost.inc({ mirror });
  }

  groupSyncCompleted(mirror: string, summary: GroupSyncSummary): void {
    this.groupSyncGroups.inc({ mirror, result: 'synced' }, summary.synced);
    this.groupSyncGroups.inc({ mirror, result: 'skipped_active' }, summary.skippedActive);
    this.groupSyncGroups.inc({ mirror, result: 'unchanged' }, summary.unchanged);
    this.groupSyncClamped.inc({ mirror }, summary.clampedPartitions);
    this.groupSyncLast.set({ mirror }, Date.now() / 1000);
  }

  groupSyncFailed(mirror: string): void {
    this.groupSyncFailures.inc({ mirror });
  }

  /** A config or ACL sync round ended: `changed` topics changed, `failed` left out (undefined: the
   *  round failed as a whole). */
  topicSyncRound(mirror: string, sync: 'configs' | 'acls', changed: number, failed: number | undefined): void {
    this.topicSyncChanges.inc({ mirror, sync }, changed);
    this.topicSyncFailures.inc({ mirror, sync }, failed ?? 1);
    if (failed === 0) this.topicSyncLast.set({ mirror, sync }, Date.now() / 1000);
  }

  topicAclsChanged(mirror: string, change: { readonly granted: number; readonly revoked: number; readonly denied: number }): void {
    for (const kind of ['granted', 'revoked', 'denied'] as const) this.topicAclChanges.inc({ mirror, change: kind }, change[kind]);
  }

  operationFinished(operation: string, outcome: OperationOutcome, seconds: number): void {
    this.operations.observe({ operation, outcome }, Math.max(0, seconds));
  }
}

/** The running metrics endpoint. */
export interface MetricsServer {
  /** The port it listens on (the one asked for, or the one the OS chose for 0). */
  readonly port: number;
  /**
   * Stop listening and end every connection, idle or not. A scraper keeps its connection alive and
   * Prometheus scrapes more often than the server's keep-alive timeout, so `server.close()` alone
   * leaves a connection that was busy at that moment open for good, and the worker never exits.
   */
  close(): Promise<void>;
}

/**
 * Serve `metrics` at http://host:port/metrics (and 404 elsewhere). Resolves once listening; a port
 * in use rejects with the listen error (the caller turns it into a config error).
 */
export async function serveMetrics(metrics: Metrics, host: string, port: number): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting metrics failed: ${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
