// What workflows, the activities that reach the runner, the client and the CLI share: workflow
// ids, update and query definitions, and the JSON shapes they carry. Imports nothing but the
// workflow API's definers (safe in and out of the workflow sandbox) and types.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { PartitionSelection } from '../domain/commands.ts';
import type { GroupSyncSummary } from '../kafka/group-offsets.ts';

/** The operations an operator starts (one workflow type each) and the long-lived runner. */
export const Operations = ['createMirror', 'alterMirror', 'startTopics', 'pauseTopics', 'resumeTopics', 'failover', 'promote', 'retryPartitions', 'deleteMirror', 'failback'] as const;
export type Operation = (typeof Operations)[number];
export type WorkflowKind = Operation | 'mirrorRunner';

/** The runner's workflow id: one runner per mirror. */
export const runnerWorkflowId = (mirror: string): string => `mirror:${mirror}`;

/** Who asked and why: stored as the events' metadata (never a credential). */
export interface Requester {
  /** Default: the OS user of the CLI, or "temporal-ui" when a workflow started from the UI names no actor. */
  readonly actor?: string;
  readonly reason?: string;
}

/** A request an operation makes to the runner, with the operation that makes it (event metadata). */
export interface RunnerRequest {
  readonly partitions: PartitionSelection;
  readonly actor: string;
  readonly reason?: string;
  readonly workflowId: string;
  readonly runId: string;
}

/** What a runner update did: how many partitions it touched and where they are now. */
export interface RunnerChange {
  readonly partitions: number;
  /** Partition count per state, after the change. */
  readonly states: Readonly<Record<string, number>>;
  /** Each partition of the request and its state after the change (at most 10,000 listed; absent
   *  from runners older than this field). */
  readonly list?: readonly PartitionProgress[];
  /** Partitions that ended FAILED (at most 100 listed). */
  readonly failed: readonly FailedPartition[];
}

export interface FailedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly code: string;
  readonly message: string;
}

/** Pause: PAUSING, then returns once no copy fetches those partitions, and they are PAUSED. */
export const pauseUpdate = defineUpdate<RunnerChange, [RunnerRequest]>('pause');
/** Resume: back to MIRRORING; copying restarts from the destination end. */
export const resumeUpdate = defineUpdate<RunnerChange, [RunnerRequest]>('resume');
/** A stop (failover or promote): the partitions that can stop go to STOPPING; returns once no copy
 *  or alignment holds any of them (their final positions are recorded by the copies as they end). */
export const stopUpdate = defineUpdate<RunnerChange, [RunnerRequest & { readonly mode: 'failover' | 'promote' }]>('stop');
/** An operator's retry: FAILED partitions of the selection go back to the state they failed in
 *  (attempts reset); the runner then copies or aligns them again. */
export const retryUpdate = defineUpdate<RunnerChange, [RunnerRequest]>('retry');
/** Re-read partitions an operation changed directly in the event store (a completed stop). */
export const refreshUpdate = defineUpdate<RunnerChange, [RunnerRequest]>('refresh');
/** The partitions a start put in LOG_TRUNCATION: the runner aligns them, waits for their ISR and
 *  moves them to MIRRORING; returns once none of them is still in LOG_TRUNCATION. */
export const truncateUpdate = defineUpdate<RunnerChange, [RunnerRequest]>('truncate');

export interface PartitionProgress {
  readonly topic: string;
  readonly partition: number;
  readonly state: string;
  readonly error?: { readonly code: string; readonly message: string };
  /** Offsets the operation has read, as decimal strings (null: not known): the last mirrored
   *  offset (startTopics), both ends (failover, promote: the lag a promote waits on). */
  readonly lastMirroredOffset?: string | null;
  readonly destinationEnd?: string | null;
  readonly sourceEnd?: string | null;
}

/** Every workflow's `progress` query: the step it is at and its partitions by state. */
export interface OperationProgress {
  readonly workflow: WorkflowKind;
  readonly mirror: string;
  /** What it is doing now, for people ("creating destination topics", "waiting for the ISR"). */
  readonly step: string;
  readonly done: boolean;
  /** Partitions the operation is about. */
  readonly total: number;
  /** Partition count per state. */
  readonly states: Readonly<Record<string, number>>;
  /** Per partition (omitted with {summary: true}; at most 10,000 listed). */
  readonly partitions?: readonly PartitionProgress[];
  /** With {unfinished}: the first partitions not yet in one of its `done` states (at most `max`). */
  readonly unfinished?: readonly PartitionProgress[];
}

/** What the `progress` query lists: everything, a summary (counts only), and/or a few partitions
 *  the operation has not finished with — what a terminal shows of 2,000 partitions. */
export interface ProgressOptions {
  readonly summary?: boolean;
  readonly unfinished?: { readonly done: readonly string[]; readonly max: number };
}

export const progressQuery = defineQuery<OperationProgress, [ProgressOptions?]>('progress');

/** The runner's own picture, beyond `progress`: its running activities. */
export interface RunnerStatus {
  readonly mirror: string;
  readonly copies: number;
  readonly truncations: number;
  /** Partitions being copied right now. */
  readonly copying: number;
  /** FAILED partitions with an automatic retry scheduled. */
  readonly retriesScheduled: number;
  readonly restarts: number;
  /** The last consumer-group offset sync: groups synced / skipped-active / unchanged, clamped partitions. */
  readonly lastGroupSync: (GroupSyncSummary & { readonly at: string }) | null;
}

export const statusQuery = defineQuery<RunnerStatus>('status');
