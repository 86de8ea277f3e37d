// Data-plane activities: the copier under Temporal (DESIGN §4, §5). A copy activity copies a set of
// partitions (any topics of one mirror) until it is cancelled or one of them fails; it heartbeats,
// holds the partitions' write lease, shares the worker's byte budget, and records the partitions'
// last mirrored positions in the event log itself at a bounded rate (the destination log, not the
// heartbeat, is the checkpoint). The mirror runner is the only caller of copyPartitions.
import { Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataPlaneConfig } from '../config.ts';
import type { Db } from '../db/database.ts';
import { createPartitionLease } from '../db/leases.ts';
import { executeMirrorCommand } from '../db/mirror-store.ts';
import type { MirrorCommand } from '../domain/commands.ts';
import { KmirrorError } from '../domain/errors.ts';
import { asKmirrorError, heartbeating } from './edge.ts';
import { recordsLost } from '../db/projections/records-lost.ts';
import type { ByteBudget } from '../kafka/budget.ts';
import { align, boundaryChecksum, copy, partitionKey, recordsAt, type CopyRequest, type RecordsLoss, type CopyResult, type MirroredPosition, type TopicPartitions } from '../kafka/copier.ts';
import { endOffsets } from '../kafka/offsets.ts';
import { RawCluster } from '../kafka/protocol.ts';
import type { EventMetadata } from '../db/event-store/types.ts';
import type { ClusterClients } from './cluster-clients.ts';
import type { Metrics } from '../metrics/metrics.ts';

export interface CopyInput {
  readonly mirror: string;
  readonly assignments: readonly TopicPartitions[];
}

/** How one partition ended a copy or an alignment. Offsets are decimal strings. */
export interface PartitionResult {
  readonly topic: string;
  readonly partition: number;
  readonly status: 'copying' | 'caught-up' | 'stopped' | 'failed';
  /** The destination end when the activity stopped. */
  readonly nextOffset: string;
  readonly error?: { readonly code: string; readonly message: string; readonly retryable: boolean };
  /** Offsets the source's retention removed before they were mirrored. */
  readonly skipped?: { readonly from: string; readonly to: string };
}

export interface CopyOutcome {
  readonly partitions: readonly PartitionResult[];
  /** The lease was taken by another owner (this worker lost Postgres for longer than the lease). */
  readonly leaseLost: boolean;
  readonly records: number;
  readonly bytes: number;
}

function outcome(result: CopyResult): CopyOutcome {
  return {
    partitions: result.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      status: p.status,
      nextOffset: p.nextOffset.toString(),
      ...(p.error ? { error: errorOf(p.error) } : {}),
      ...(p.skipped ? { skipped: { from: p.skipped.from.toString(), to: p.skipped.to.toString() } } : {}),
    })),
    leaseLost: result.leaseLost !== undefined,
    records: result.stats.records,
    bytes: result.stats.bytes,
  };
}

const errorOf = (err: KmirrorError) => ({ code: err.code, message: err.message, retryable: err.retryable });

/** How often a copy samples its partitions' source LSOs for the lag metrics (one ListOffsets per
 *  topic and leader): the lag stays true while the copier waits on a slow or absent destination. */
const LAG_SAMPLE_MS = 5_000;

export interface DataPlaneDeps {
  /** Names this worker in lease owners (host and pid). */
  readonly workerIdentity: string;
  readonly db: Db;
  readonly clients: ClusterClients;
  readonly budget: ByteBudget;
  readonly metrics: Metrics;
  readonly config: DataPlaneConfig;
}

export function createDataPlaneActivities(deps: DataPlaneDeps) {
  const { db, clients, budget, metrics, config, workerIdentity } = deps;

  /**
   * Run the copier for this activity: the mirror's clusters through sessions of its own (a broker
   * answers one connection's requests in order, so a copy sharing connections would wait behind
   * another copy's long-polling fetch: measured 114 → 11 MiB/s beside one idle copy), and a lease
   * owned by this attempt.
   */
  async function withRequest<T>(input: CopyInput, signal: AbortSignal, run: (request: CopyRequest) => Promise<T>, sampleSourceEnds?: (ends: ReadonlyMap<string, bigint>) => void): Promise<T> {
    const info = Context.current().info;
    const m = await clients.mirror(input.mirror);
    const [sourceClient, destinationClient] = await Promise.all([clients.get(m.sourceCluster), clients.get(m.destinationCluster)]);
    const source = new RawCluster(sourceClient.kafka);
    const destination = new RawCluster(destinationClient.kafka);
    const sampler = sampleSourceEnds === undefined ? undefined : sampling(source, input.assignments, sampleSourceEnds);
    try {
      return await run(request(input, signal, info, source, destination));
    } finally {
      sampler?.stop();
      await Promise.allSettled([source.close(), destination.close(), sampler?.done]);
    }
  }

  /** Read the partitions' source LSOs every LAG_SAMPLE_MS (first at once) until stopped; a failed
   *  read is skipped (the copy itself reports the source unreachable). */
  function sampling(source: RawCluster, assignments: readonly TopicPartitions[], sample: (ends: ReadonlyMap<string, bigint>) => void): { stop(): void; readonly done: Promise<void> } {
    const stop = new AbortController();
    const done = (async () => {
      while (!stop.signal.aborted) {
        await endOffsets(source, assignments, 'source').then(sample, () => undefined);
        await sleep(LAG_SAMPLE_MS, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    })();
    return { stop: () => stop.abort(), done };
  }

  function request(input: CopyInput, signal: AbortSignal, info: ReturnType<typeof Context.current>['info'], source: RawCluster, destination: RawCluster): CopyRequest {
    return {
      source,
      destination,
      assignments: input.assignments,
      budget,
      signal,
      lease: createPartitionLease(db, {
        mirror: input.mirror,
        assignments: input.assignments,
        owner: `${workerIdentity}/${info.workflowExecution?.workflowId ?? ''}/${info.activityId}#${info.attempt}`,
        ttlMs: config.leaseTtlMs,
        graceMs: config.leaseGraceMs,
        onTakeover: (partitions) => metrics.leaseTakenOver(input.mirror, partitions),
      }),
      options: { produceTimeoutMs: config.produceTimeoutMs },
      onRecordsLost: lossRecorder(input.mirror),
    };
  }

  /** Runs a mirror command from inside this copy activity, as the workflow that runs it (actor
   *  kmirror). The destination log stays the checkpoint, so a failed command is logged as `failed`
   *  and the copy goes on. */
  function commandRecorder(failed: string): (command: MirrorCommand) => Promise<void> {
    const ctx = Context.current();
    const { workflowId, runId } = ctx.info.workflowExecution ?? {};
    return async (command) => {
      try {
        await executeMirrorCommand(db, command, { actor: 'kmirror', ...(workflowId === undefined ? {} : { workflowId, runId }) });
      } catch (err) {
        ctx.log.warn(failed, { mirror: command.mirror, error: (err as Error).message });
      }
    };
  }

  /**
   * Decides, by the mirror's policy, which losses the copier may move past, and records those
   * (RecordRecordsLost) before it does; under `fail` the others fail their partitions (RECORDS_LOST)
   * until an operator accepts the loss. The policy is read now, from the log: an acceptance recorded
   * while this copy ran counts. If it cannot be read the copier is told so (a retryable error) and
   * tries again.
   */
  function lossRecorder(mirror: string): NonNullable<CopyRequest['onRecordsLost']> {
    const record = commandRecorder('recording records lost to retention failed');
    const { log } = Context.current();
    return async (losses) => {
      let skip: RecordsLoss[];
      try {
        const view = await recordsLost(db, mirror);
        skip = losses.filter((l) => view.mayContinue(l.topic, l.partition));
      } catch (err) {
        const failure = asKmirrorError(err);
        throw new KmirrorError(failure.code, `reading mirror ${mirror}'s policy for records lost failed: ${failure.message}`, failure.details, { cause: err });
      }
      const fail = losses.filter((l) => !skip.includes(l));
      const total = (ls: readonly RecordsLoss[]) => ls.reduce((n, l) => n + (l.to - l.from), 0n);
      if (fail.length > 0) log.warn('records lost to source retention before they were mirrored: failing the partitions (policy fail)', { mirror, partitions: fail.length, records: total(fail).toString() });
      if (skip.length > 0) {
        const lost = total(skip);
        log.warn('records lost to source retention before they were mirrored', { mirror, partitions: skip.length, records: lost.toString() });
        await record({ type: 'RecordRecordsLost', mirror, losses: skip });
        metrics.recordsLost(mirror, lost);
      }
      return { fail };
    };
  }

  /** Records a copy's positions (RecordLastMirrored, skipRefused): the last mirrored offsets for
   *  describe and failback. */
  function positionRecorder(mirror: string): (positions: readonly MirroredPosition[]) => Promise<void> {
    const record = commandRecorder('recording last mirrored positions failed');
    return async (positions) => record({ type: 'RecordLastMirrored', mirror, positions, skipRefused: true });
  }

  /** Run a copy with its progress reported to the metrics (lag, counts) until it ends. */
  async function reported(
    mirror: string,
    run: (onProgress: NonNullable<CopyRequest['onProgress']>, sampleSourceEnds: (ends: ReadonlyMap<string, bigint>) => void) => Promise<CopyResult>,
  ): Promise<CopyOutcome> {
    const reporter = metrics.copyReporter(mirror);
    try {
      const result = await run(
        (progress, stats) => reporter.progress(progress, stats),
        (ends) => reporter.sourceEnds(ends),
      );
      // Counts the last round did not report (an alignment reports no round at all).
      reporter.progress([], result.stats);
      if (result.leaseLost !== undefined) metrics.leaseLost(mirror);
      return outcome(result);
    } finally {
      reporter.end();
    }
  }

  return {
    /**
     * A stop's record of where each destination partition ends (DESIGN §6): the end offset, the
     * checksum of the last record, and the source leader epoch of its batch when the source answers
     * (-1 when it does not). Recorded as the final position: the first a stop records is kept.
     */
    async recordFinalPositions(input: {
      readonly mirror: string;
      readonly partitions: readonly { readonly topic: string; readonly partition: number }[];
      readonly metadata: EventMetadata;
    }): Promise<{ readonly positions: readonly { readonly topic: string; readonly partition: number; readonly offset: string; readonly leaderEpoch: number }[] }> {
      const m = await clients.mirror(input.mirror);
      const destination = await clients.get(m.destinationCluster);
      const source = await clients.get(m.sourceCluster).catch(() => undefined);
      const byTopic = new Map<string, number[]>();
      for (const { topic, partition } of input.partitions) byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
      const topics = [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
      const [ends, starts] = await Promise.all([endOffsets(destination.raw, topics, 'destination'), endOffsets(destination.raw, topics, 'destination', 'earliest')]);
      const wanted = input.partitions
        .filter((p) => (ends.get(partitionKey(p.topic, p.partition)) ?? 0n) > (starts.get(partitionKey(p.topic, p.partition)) ?? 0n))
        .map((p) => ({ ...p, offset: ends.get(partitionKey(p.topic, p.partition))! - 1n }));
      const onDestination = await recordsAt(destination.raw, wanted);
      const onSource = source === undefined ? new Map() : await recordsAt(source.raw, wanted).catch(() => new Map());
      // Final positions: the chart keeps the first one a stop records (a stop run again, after the
      // topic was made writable, must not take what the destination took since as mirrored data)
      // and drops the others (skipRefused).
      const positions: (MirroredPosition & { final: true })[] = [];
      for (const w of wanted) {
        const key = partitionKey(w.topic, w.partition);
        const last = onDestination.get(key);
        if (last === undefined) continue;
        positions.push({ topic: w.topic, partition: w.partition, offset: w.offset + 1n, leaderEpoch: onSource.get(key)?.leaderEpoch ?? -1, checksum: boundaryChecksum(last, w.offset), final: true });
      }
      if (positions.length > 0) await executeMirrorCommand(db, { type: 'RecordLastMirrored', mirror: input.mirror, positions, skipRefused: true }, input.metadata);
      return {
        positions: input.partitions.map((p) => ({
          ...p,
          offset: (ends.get(partitionKey(p.topic, p.partition)) ?? 0n).toString(),
          leaderEpoch: onSource.get(partitionKey(p.topic, p.partition))?.leaderEpoch ?? -1,
        })),
      };
    },

    /** A promote's last copy: everything committed on the source now, then stop (the partitions
     *  are STOPPING: nobody else copies them). */
    async drainPartitions(input: CopyInput): Promise<CopyOutcome> {
      return heartbeating(
        async (signal) =>
          reported(input.mirror, (onProgress, sample) =>
            withRequest(input, signal, (req) => copy({ ...req, untilCaughtUp: true, onProgress, positions: { everyMs: config.positionIntervalMs, record: positionRecorder(input.mirror) } }), sample),
          ),
        () => ({ draining: input.assignments.reduce((n, a) => n + a.partitions.length, 0) }),
      );
    },

    /** LOG_TRUNCATION's data step: align every destination partition to its source's log start
     *  (and check its boundary record), then stop. */
    async alignPartitions(input: CopyInput): Promise<CopyOutcome> {
      return heartbeating(
        async (signal) => reported(input.mirror, () => withRequest(input, signal, align)),
        () => ({ aligning: input.assignments.reduce((n, a) => n + a.partitions.length, 0) }),
      );
    },

    /**
     * Copy until cancelled, or until a partition fails (then every partition stops, so the runner
     * can fail that one and restart the others). Returns how each partition ended.
     */
    async copyPartitions(input: CopyInput): Promise<CopyOutcome> {
      let records = 0;
      return heartbeating(
        async (signal) => {
          const local = new AbortController();
          const abort = (): void => local.abort(signal.reason);
          signal.addEventListener('abort', abort, { once: true });
          const result = await reported(input.mirror, (report, sample) =>
            withRequest(
              input,
              local.signal,
              (req) =>
                copy({
                  ...req,
                  positions: { everyMs: config.positionIntervalMs, record: positionRecorder(input.mirror) },
                  onProgress: (progress, stats) => {
                    report(progress, stats);
                    records = stats.records;
                    // One failed partition ends the activity: the runner fails it and restarts the rest.
                    if (progress.some((p) => p.status === 'failed')) local.abort();
                  },
                }),
              sample,
            ),
          );
          signal.removeEventListener('abort', abort);
          return result;
        },
        () => ({ partitions: input.assignments.reduce((n, a) => n + a.partitions.length, 0), records }),
      );
    },
  };
}
