// `mirrorRunner`: the long-lived workflow of one mirror (id `mirror:<name>`), the only owner of its
// data-plane activities (DESIGN §4). It aligns partitions in LOG_TRUNCATION (then waits for their
// ISR and moves them to MIRRORING), copies MIRRORING partitions in copy activities of up to
// partitionsPerCopier partitions, records a copy's failures as FAILED partitions and retries the
// retryable ones with backoff (1 s … 300 s), and answers the operations' Updates: pause (returns
// once fetching has stopped), resume, truncate (a start's new partitions). Every
// discoveryIntervalMs it looks at the source: new topics matching the mirror's include patterns
// are started (a startTopics child, actor "kmirror"), partitions a source topic gained join
// (destination grown first, then GrowTopic: they enter LOG_TRUNCATION), and the mirror topics'
// configs follow their source topics' (altered, then recorded: SyncTopicConfigs), and so do their
// ACLs for the principals of the mirror's ACL filter, while every writer of a mirror topic is denied
// (SyncTopicAcls; a stop waits for that round). It continues as new when
// Temporal suggests it, after its tasks and handlers have finished.
//
// Input (Temporal UI: workflow type `mirrorRunner`, id `mirror:<name>`): {"mirror": "<name>"}.
// Operations start it themselves (createMirror, and any update finds or starts it).
// State and decisions live in mirror-runner-state.ts; this file performs them.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  log,
  ParentClosePolicy,
  patched,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { MirrorCommandInput } from '../activities/event-store.ts';
import { aclRound, asFailure, dataPlane, failureOf, isStop, metadataOf, Mutex, periodic, selectionOf, setSearchAttributes, short, waits } from './common.ts';
import { pauseUpdate, progressQuery, refreshUpdate, resumeUpdate, retryUpdate, statusQuery, stopUpdate, truncateUpdate, type RunnerRequest } from './messages.ts';
import { MirrorRunnerState, type Task } from './mirror-runner-state.ts';
import { key } from './progress.ts';
import { startTopics } from './start-topics.ts';

export interface MirrorRunnerInput {
  readonly mirror: string;
}

export interface MirrorRunnerResult {
  readonly mirror: string;
  readonly ended: string;
}

export async function mirrorRunner(input: MirrorRunnerInput): Promise<MirrorRunnerResult> {
  if (typeof input?.mirror !== 'string' || input.mirror === '') {
    throw ApplicationFailure.nonRetryable('mirrorRunner expects {"mirror": "<name>"}', 'INVALID_ARGUMENT');
  }
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow: 'mirrorRunner' });
  const settings = await short.runnerSettings();
  const tasks = dataPlane(settings.copyHeartbeatTimeoutMs);
  const view = await short.loadMirrorView({ mirror });
  if (view.state === null) return { mirror, ended: `mirror ${mirror} does not exist` };
  const state = new MirrorRunnerState(mirror, settings);
  state.load(view, Date.now());

  const lock = new Mutex();
  const scopes = new Map<number, CancellationScope>();
  const system = metadataOf({ actor: 'kmirror' });
  let draining = false;

  /** Apply a command and take in the states it left, one at a time (the lock). */
  const command = (cmd: MirrorCommandInput, metadata = system) =>
    lock.run(async () => {
      const result = await short.applyMirrorCommand({ command: cmd, metadata });
      state.apply(result.topics, Date.now());
      return result;
    });

  /** Re-read every partition's state (after a command was refused: someone else moved them). */
  const reload = () =>
    lock.run(async () => {
      state.apply((await short.loadMirrorView({ mirror })).topics, Date.now());
    });

  /** Re-read the topics a request names (all when it names none) from the event store. */
  const reloadTopics = (req: RunnerRequest) => {
    const topics = req.partitions === 'all' ? undefined : req.partitions.map((p) => p.topic);
    return lock.run(async () => state.apply((await short.loadMirrorView({ mirror, ...(topics ? { topics } : {}) })).topics, Date.now()));
  };

  // --- Updates and queries ------------------------------------------------------------------
  const validate = (name: string) => (req: RunnerRequest) => {
    if (draining) throw ApplicationFailure.create({ type: 'RUNNER_BUSY', message: `the runner of mirror ${mirror} is restarting; try again`, nonRetryable: false });
    if (typeof req?.actor !== 'string' || typeof req.workflowId !== 'string' || typeof req.runId !== 'string' || (req.partitions !== 'all' && !Array.isArray(req.partitions))) {
      throw ApplicationFailure.nonRetryable(`${name}: expected {"partitions": "all" | [{"topic", "partitions"?}], "actor", "workflowId", "runId"}`, 'INVALID_ARGUMENT');
    }
    if (req.partitions !== 'all') {
      for (const p of req.partitions) {
        if (!state.hasTopic(p.topic)) throw ApplicationFailure.nonRetryable(`topic ${p.topic} is not in mirror ${mirror}`, 'TOPIC_NOT_IN_CLUSTER_MIRROR');
      }
    }
  };
  const requestMetadata = (req: RunnerRequest) => ({ actor: req.actor, ...(req.reason === undefined ? {} : { reason: req.reason }), workflowId: req.workflowId, runId: req.runId });

  setHandler(
    pauseUpdate,
    async (req) => {
      const keys = state.keysOf(req.partitions);
      try {
        await command({ type: 'PauseTopics', mirror, partitions: req.partitions }, requestMetadata(req));
        // The main loop cancels the copies that hold them; a cancelled copy returns only once its
        // in-flight produce requests are acknowledged (WAIT_CANCELLATION_COMPLETED).
        await condition(() => state.idle(keys));
        const pausing = state.inState(keys, 'PAUSING');
        if (pausing.length > 0) await command({ type: 'CompletePause', mirror, partitions: selectionOf(pausing) }, requestMetadata(req));
      } catch (err) {
        throw asFailure(err);
      }
      return state.change(keys);
    },
    { validator: validate('pause') },
  );

  setHandler(
    resumeUpdate,
    async (req) => {
      const keys = state.keysOf(req.partitions);
      try {
        await command({ type: 'ResumeTopics', mirror, partitions: req.partitions }, requestMetadata(req));
      } catch (err) {
        throw asFailure(err);
      }
      return state.change(keys);
    },
    { validator: validate('resume') },
  );

  setHandler(
    stopUpdate,
    async (req) => {
      const keys = state.keysOf(req.partitions);
      try {
        // Partitions already STOPPING (an interrupted stop run again) or STOPPED are left as they are.
        const stoppable = state.notIn(keys, ['STOPPING', 'STOPPED']);
        if (stoppable.length > 0) await command({ type: 'StopTopics', mirror, partitions: selectionOf(stoppable), mode: req.mode === 'promote' ? 'promote' : 'failover' }, requestMetadata(req));
        // Copies are cancelled by the main loop; an alignment in progress finishes by itself; an
        // ACL round on the destination is cancelled and ends before the stop lifts the guard.
        await endAclRound();
        await condition(() => state.idle(keys));
      } catch (err) {
        throw asFailure(err);
      }
      return state.change(keys);
    },
    { validator: validate('stop') },
  );

  setHandler(
    retryUpdate,
    async (req) => {
      // Read the partitions' states first: the operator acts on what the event log says.
      await reloadTopics(req);
      const keys = state.keysOf(req.partitions);
      const failed = state.inState(keys, 'FAILED');
      try {
        if (failed.length > 0) await command({ type: 'RetryPartitions', mirror, partitions: selectionOf(failed), trigger: 'operator' }, requestMetadata(req));
      } catch (err) {
        throw asFailure(err);
      }
      return state.change(keys);
    },
    { validator: validate('retry') },
  );

  setHandler(
    refreshUpdate,
    async (req) => {
      await reloadTopics(req);
      return state.change(state.keysOf(req.partitions));
    },
    { validator: validate('refresh') },
  );

  setHandler(
    truncateUpdate,
    async (req) => {
      // A start appended these partitions (LOG_TRUNCATION) after this runner loaded: read them.
      await reloadTopics(req);
      const keys = state.keysOf(req.partitions);
      await condition(() => state.noneIn(keys, ['LOG_TRUNCATION']));
      return state.change(keys);
    },
    {
      validator: (req) => {
        if (draining) throw ApplicationFailure.create({ type: 'RUNNER_BUSY', message: `the runner of mirror ${mirror} is restarting; try again`, nonRetryable: false });
        if (typeof req?.actor !== 'string' || (req.partitions !== 'all' && !Array.isArray(req.partitions))) {
          throw ApplicationFailure.nonRetryable('truncate: expected {"partitions": [{"topic"}], "actor", "workflowId", "runId"}', 'INVALID_ARGUMENT');
        }
      },
    },
  );

  setHandler(progressQuery, (options) => ({ workflow: 'mirrorRunner', mirror, step: draining ? 'restarting' : 'running', done: false, ...state.progress(options) }));
  setHandler(statusQuery, () => ({
    mirror,
    copies: state.runningTasks('copy'),
    truncations: state.runningTasks('truncate'),
    copying: state.copying(),
    retriesScheduled: state.retriesScheduled(),
    restarts: state.restarts,
    lastGroupSync: state.lastGroupSync,
  }));

  // --- Tasks --------------------------------------------------------------------------------
  const run = async (task: Task) => {
    if (task.kind === 'copy') return (await tasks.copyPartitions({ mirror, assignments: task.assignments })).partitions;
    const aligned = await tasks.alignPartitions({ mirror, assignments: task.assignments });
    const ok = aligned.partitions.filter((p) => p.status !== 'failed');
    if (ok.length > 0) {
      await waits.waitForIsr({ mirror, topics: [...new Set(ok.map((p) => p.topic))] });
      // A stop may have come meanwhile: only partitions still in LOG_TRUNCATION move on.
      const still = state.inState(ok.map((p) => key(p.topic, p.partition)), 'LOG_TRUNCATION');
      if (still.length > 0) await command({ type: 'CompleteTruncation', mirror, partitions: selectionOf(still) });
    }
    return aligned.partitions;
  };

  const launch = (task: Task): void => {
    const scope = new CancellationScope();
    scopes.set(task.id, scope);
    void scope
      .run(() => run(task))
      .then(
        (results) => state.taskEnded(task.id, results, !patched('task-failures-only-in-served-state')),
        (err: unknown) => {
          const failure = failureOf(err);
          if (isStop(err) || failure === undefined) {
            if (!isStop(err)) log.warn('data-plane task ended unexpectedly', { mirror, task: task.id, error: String(err) });
            state.taskStopped(task.id);
          } else {
            state.taskFailed(task.id, failure);
          }
        },
      )
      .finally(() => scopes.delete(task.id));
  };

  // --- Main loop ----------------------------------------------------------------------------
  // Pauses interrupted by a restart: nothing copies them any more, so they are paused.
  const interrupted = state.inState(state.keysOf('all'), 'PAUSING');
  if (interrupted.length > 0) await command({ type: 'CompletePause', mirror, partitions: selectionOf(interrupted) });

  // --- Discovery ---------------------------------------------------------------------------
  let nextDiscovery = Date.now() + settings.discoveryIntervalMs;
  let discoveries = 0;
  const starting = new Set<string>();
  const discover = async (): Promise<void> => {
    nextDiscovery = Date.now() + settings.discoveryIntervalMs;
    try {
      const found = await periodic.discoverTopics({ mirror });
      for (const topic of found.grown) {
        await short.growDestinationTopic({ mirror, topic });
        await command({ type: 'GrowTopic', mirror, topic: topic.topic, partitionCount: topic.partitionCount }, metadataOf({ actor: 'kmirror', reason: `auto-discovery: source topic ${topic.topic} has ${topic.partitionCount} partitions` }));
      }
      const fresh = found.newTopics.filter((t) => !starting.has(t));
      if (fresh.length === 0) return;
      for (const t of fresh) starting.add(t);
      // A start of its own (the same checks and steps as an operator's); it outlives this run.
      const child = await startChild(startTopics, {
        workflowId: `start:${mirror}:discovered:${workflowInfo().runId.slice(0, 8)}-${++discoveries}`,
        args: [{ mirror, topics: fresh, actor: 'kmirror', reason: 'auto-discovery: the topics match the mirror\'s include patterns' }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      void child.result().then(
        () => undefined,
        (err: unknown) => log.warn('starting discovered topics failed', { mirror, topics: fresh.length, error: String(err) }),
      ).finally(() => {
        for (const t of fresh) starting.delete(t);
      });
    } catch (err) {
      log.warn('topic discovery failed; trying again at the next interval', { mirror, error: String(err) });
    }
  };

  // --- Topic config sync (in the discovery round, on its own: a refusal must not stop discovery) --
  // The activity alters and records each topic itself (SyncTopicConfigs events, actor kmirror).
  const syncConfigs = async (): Promise<void> => {
    try {
      const { failed } = await periodic.syncTopicConfigs({ mirror, metadata: system });
      if (failed.length > 0) log.warn('topic config sync left topics out; trying again at the next interval', { mirror, failed: failed.map((f) => `${f.topic}: ${f.error.code}`).join('; ') });
    } catch (err) {
      log.warn('topic config sync failed; trying again at the next interval', { mirror, error: String(err) });
    }
  };

  // --- Topic ACLs (in the discovery round, after configs) ----------------------------------------
  // ACL sync and the read-only guard kept current (one heartbeating activity). A stop cancels the
  // round and waits for it to end (`guarding`): a DENY WRITE put on a topic after its stop had
  // lifted them would leave a failed-over topic read-only. A round that starts after a stop was
  // recorded reads the topic as STOPPING and leaves it alone.
  let guarding = false;
  let guardScope: CancellationScope | undefined;
  /** End the ACL round, if one runs: cancelled, it stops while reading the source or between topics. */
  const endAclRound = async (): Promise<void> => {
    guardScope?.cancel();
    await condition(() => !guarding);
  };
  const syncAcls = async (): Promise<void> => {
    // Draining for continue-as-new: a round started now could outlive this run, unseen by the next
    // one's stops (endAclRound has run already).
    if (draining) return;
    guarding = true;
    guardScope = new CancellationScope();
    try {
      const { failed, skipped, sourceSkipped } = await guardScope.run(() => aclRound.syncTopicAcls({ mirror, metadata: system }));
      if (failed.length > 0) log.warn('ACL sync left topics out; trying again at the next interval', { mirror, failed: failed.map((f) => `${f.topic}: ${f.error.code}`).join('; ') });
      if (skipped !== undefined) log.info('ACL sync and the read-only guard skipped', { mirror, reason: skipped });
      if (sourceSkipped !== undefined) log.info("the source's ACLs were not read; the read-only guard was kept", { mirror, reason: sourceSkipped });
    } catch (err) {
      if (!isStop(err)) log.warn('ACL sync failed; trying again at the next interval', { mirror, error: String(err) });
    } finally {
      guarding = false;
      guardScope = undefined;
    }
  };

  // --- Consumer-group offset sync --------------------------------------------------------------
  let nextGroupSync = Date.now() + settings.groupSyncIntervalMs;
  const syncGroups = async (): Promise<void> => {
    nextGroupSync = Date.now() + settings.groupSyncIntervalMs;
    if (state.inState(state.keysOf('all'), 'MIRRORING').length === 0) return;
    try {
      state.lastGroupSync = { ...(await periodic.syncGroupOffsets({ mirror })), at: new Date(Date.now()).toISOString() };
    } catch (err) {
      log.warn('consumer-group offset sync failed; trying again at the next interval', { mirror, error: String(err) });
    }
  };

  // Periodic work runs beside the loop, one round of each kind at a time: a source that does not
  // answer must not hold up pauses, stops or failures.
  const running = { discovery: false, groups: false };
  const beside = (kind: keyof typeof running, work: () => Promise<void>): void => {
    if (running[kind]) return;
    running[kind] = true;
    void work().finally(() => {
      running[kind] = false;
    });
  };

  for (;;) {
    state.changed = false;
    if (Date.now() >= nextDiscovery) {
      const withConfigs = patched('topic-config-sync');
      const withAcls = patched('topic-acl-sync');
      beside('discovery', async () => {
        await discover();
        if (withConfigs) await syncConfigs();
        if (withAcls) await syncAcls();
      });
    }
    if (Date.now() >= nextGroupSync) beside('groups', syncGroups);
    for (const group of state.takeFailures()) {
      const first = group[0]!;
      try {
        await command({ type: 'FailPartitions', mirror, partitions: selectionOf(group), error: { code: first.code, message: first.message }, retryable: first.retryable });
      } catch (err) {
        log.warn('recording partition failures was refused; re-reading the mirror', { mirror, error: String(err) });
        await reload();
      }
      state.failuresRecorded(group);
    }
    const due = state.dueRetries(Date.now());
    if (due.length > 0) {
      try {
        await command({ type: 'RetryPartitions', mirror, partitions: selectionOf(due), trigger: 'automatic' });
      } catch (err) {
        log.warn('automatic retry was refused; re-reading the mirror', { mirror, error: String(err) });
        await reload();
      }
    }
    for (const id of state.tasksToStop()) scopes.get(id)?.cancel();
    for (const task of state.tasksToStart(patched('copies-spread-over-running'))) launch(task);

    const info = workflowInfo();
    if ((info.continueAsNewSuggested || info.historyLength > settings.historyLimit) && state.runningTasks('truncate') === 0 && allHandlersFinished()) {
      // New requests are refused (RUNNER_BUSY, retried by the caller) while the copies stop.
      draining = true;
      for (const scope of scopes.values()) scope.cancel();
      // An ACL round would outlive this run, unseen by the next one's stops.
      await endAclRound();
      await condition(() => state.runningTasks() === 0);
      await continueAsNew<typeof mirrorRunner>({ mirror });
    }
    const deadline = Math.min(state.nextDeadline() ?? Infinity, nextDiscovery, nextGroupSync);
    await condition(() => state.changed, Math.max(1, deadline - Date.now()));
  }
}
