// The ClusterMirror permission model with KMIRROR_AUTHORIZATION on, as an operator meets it in the
// Temporal Web UI: a headless Chromium starts `startTopics` for a principal that may ALTER the mirror
// but not READ the topic — refused with CLUSTER_MIRROR_AUTHORIZATION_FAILED, an OperationRefused
// event, and nothing else (no topic added, no destination topic); once READ is granted through the
// `kmirror acl` CLI, the same start from the UI mirrors the topic.
import { WorkflowFailedError } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, startOperation, type OperationInputs } from '../../client/index.ts';
import { Operations, type Operation } from '../../workflows/messages.ts';
import { changeGrant } from '../../db/acl-store.ts';
import { readStream } from '../../db/event-store/read-stream.ts';
import { AUTHORIZATION_STREAM } from '../../domain/authorization.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import type { StartTopicsInput } from '../../workflows/start-topics.ts';
import { closeBrowser, launchBrowser, startWorkflowInUi } from '../support/browser.ts';
import { controlPlane, kmirrorOn, type ControlPlane } from '../support/control-plane.ts';
import { randomName, stackEnv } from '../support/stack.ts';

let t: ControlPlane;
let browser: Browser | undefined;
let page: Page;

beforeAll(async () => {
  t = await controlPlane({ env: { KMIRROR_AUTHORIZATION: 'true' } });
  browser = await launchBrowser();
  page = await browser.newPage();
});

afterAll(async () => {
  await closeBrowser(browser);
  await t?.close();
});

/** `kmirror <args>` as a child process on this file's database and task queue, authorization on. */
const cli = (args: string[]) => kmirrorOn(t, args, { env: { KMIRROR_AUTHORIZATION: 'true' } });

describe('authorization (KMIRROR_AUTHORIZATION=true)', () => {
  const mirror = randomName('acl-m');
  let topic: string;

  it('refuses a start from the Temporal UI without READ on the topic (code, event, nothing else), and runs it once granted', async () => {
    topic = await t.sourceTopic({ partitions: 1 });
    const admin = { actor: 'admin', reason: 'test setup' };
    // Creating needs CREATE too: without it the setup itself is refused.
    const unauthorizedCreate = await awaitOperation<'createMirror'>(await startOperation(t.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'test-setup' })).then(
      () => undefined,
      (err: unknown) => err as { code?: string },
    );
    expect(unauthorizedCreate?.code).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');
    await changeGrant(t.db, 'GrantAcl', { principal: 'test-setup', operation: 'CREATE', resourceType: 'CLUSTER_MIRROR', resource: '*' }, admin);
    await awaitOperation<'createMirror'>(await startOperation(t.temporal, 'createMirror', { mirror, sourceCluster: 'src', destinationCluster: 'dst', actor: 'test-setup' }));

    // mallory may ALTER the mirror (granted through the CLI) but not READ the topic.
    const granted = await cli(['acl', 'add', '--principal', 'mallory', '--operation', 'ALTER', '--mirror', mirror, '--actor', 'admin', '--json']);
    expect(granted.code, granted.stderr).toBe(0);
    expect(JSON.parse(granted.stdout)).toEqual({ granted: [`mallory ALTER CLUSTER_MIRROR ${mirror}`], unchanged: [] });

    const input = { mirror, topics: [topic], actor: 'mallory', reason: 'from the UI' } satisfies StartTopicsInput;
    const refusedId = `start:${mirror}:ui-refused`;
    await startWorkflowInUi(page, { uiUrl: stackEnv().TEMPORAL_UI_URL!, namespace: t.config.temporal.namespace, workflowId: refusedId, workflowType: 'startTopics', taskQueue: t.taskQueue, input });
    const failure = await t.temporal.client.workflow
      .getHandle(refusedId)
      .result()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as { type?: string; message?: string; nonRetryable?: boolean };
    expect(cause.type).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');
    expect(cause.message).toContain(`mallory may not run startTopics: missing READ on TOPIC ${topic}`);
    expect(cause.nonRetryable).toBe(true);

    // The refusal is an event (who, what, which workflow); nothing else happened.
    const refusals = (await readStream(t.db, AUTHORIZATION_STREAM)).filter((e) => e.type === 'OperationRefused' && (e.data as { principal: string }).principal === 'mallory');
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.data).toEqual({ principal: 'mallory', workflow: 'startTopics', mirror, missing: [{ operation: 'READ', resourceType: 'TOPIC', resource: topic }] });
    expect(refusals[0]!.metadata).toMatchObject({ actor: 'mallory', reason: 'from the UI', workflowId: refusedId });
    expect((await readStream(t.db, mirrorStreamId(mirror))).map((e) => e.type)).toEqual(['MirrorCreated']);
    expect(await t.destAdmin.listTopics()).not.toContain(topic);

    // Granted READ (the CLI again), the same request from the UI mirrors the topic.
    expect((await cli(['acl', 'add', '--principal', 'mallory', '--operation', 'READ', '--topic', topic, '--actor', 'admin'])).code).toBe(0);
    const listed = await cli(['acl', 'list', '--principal', 'mallory', '--json']);
    expect(JSON.parse(listed.stdout)).toEqual({
      authorization: true,
      grants: [
        { principal: 'mallory', operation: 'ALTER', resourceType: 'CLUSTER_MIRROR', resource: mirror },
        { principal: 'mallory', operation: 'READ', resourceType: 'TOPIC', resource: topic },
      ],
    });
    const allowedId = `start:${mirror}:ui-allowed`;
    await startWorkflowInUi(page, { uiUrl: stackEnv().TEMPORAL_UI_URL!, namespace: t.config.temporal.namespace, workflowId: allowedId, workflowType: 'startTopics', taskQueue: t.taskQueue, input });
    const result = await awaitOperation<'startTopics'>(t.temporal.client.workflow.getHandle(allowedId));
    expect(result).toMatchObject({ mirror, states: { MIRRORING: 1 }, failed: [] });

    // Revoked, a pause is refused again; through the CLI the refusal is the common error format.
    expect((await cli(['acl', 'remove', '--principal', 'mallory', '--operation', 'READ', '--topic', topic, '--actor', 'admin'])).code).toBe(0);
    const paused = await cli(['pause', mirror, '--topic', topic, '--actor', 'mallory', '--json']);
    expect(paused.code).not.toBe(0);
    expect(JSON.parse(paused.stdout || paused.stderr)).toMatchObject({ error: { code: 'CLUSTER_MIRROR_AUTHORIZATION_FAILED' } });
  });

  it('a dry run and the reading commands need DESCRIBE (refused without it, recorded); DESCRIBE does not let a failover run', async () => {
    const as = (...args: string[]) => cli([...args, '--actor', 'dana', '--json']);
    const refusedCode = async (...args: string[]) => {
      const r = await as(...args);
      return r.code === 0 ? 'ran' : (JSON.parse(r.stdout) as { error: { code: string } }).error.code;
    };
    for (const command of [['describe', mirror], ['history', mirror], ['groups', mirror], ['verify', mirror]]) expect(await refusedCode(...command), command[0]).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');
    const refusals = (await readStream(t.db, AUTHORIZATION_STREAM)).filter((e) => e.type === 'OperationRefused' && (e.data as { principal: string }).principal === 'dana');
    expect(refusals.map((e) => (e.data as { workflow: string }).workflow)).toEqual(['describe', 'history', 'groups', 'verify']);
    // Whether a mirror exists is not told to someone who may not describe it.
    const unknown = randomName('no-such-mirror');
    for (const command of ['describe', 'history', 'groups', 'verify']) expect(await refusedCode(command, unknown), command).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');

    // `list` shows only the mirrors the actor may describe (KIP-1279: listing is filtered by DESCRIBE).
    const listed = async () => (JSON.parse((await as('list')).stdout) as { name: string }[]).map((m) => m.name);
    expect(await listed()).not.toContain(mirror);
    expect((await cli(['acl', 'add', '--principal', 'dana', '--operation', 'DESCRIBE', '--mirror', mirror, '--actor', 'admin'])).code).toBe(0);
    expect(await listed()).toEqual([mirror]);
    for (const command of [['describe', mirror], ['history', mirror], ['groups', mirror]]) expect(await refusedCode(...command), command[0]).toBe('ran');
    // verify and a dry run read the topic's records: READ on it too.
    expect(await refusedCode('verify', mirror)).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');
    expect(await refusedCode('failover', mirror, '--all-topics', '--dry-run')).toBe('CLUSTER_MIRROR_AUTHORIZATION_FAILED');
    expect((await cli(['acl', 'add', '--principal', 'dana', '--operation', 'READ', '--topic', topic, '--actor', 'admin'])).code).toBe(0);
    expect(await refusedCode('verify', mirror)).toBe('ran');
    const dry = await as('failover', mirror, '--all-topics', '--dry-run');
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ result: { mode: 'failover', dryRun: true } });
    // The failover itself changes the mirror: ALTER, which DESCRIBE does not give.
    const real = await as('failover', mirror, '--all-topics');
    expect(real.code).toBe(1);
    expect(JSON.parse(real.stdout)).toMatchObject({ error: { code: 'CLUSTER_MIRROR_AUTHORIZATION_FAILED', message: expect.stringContaining(`dana may not run failover: missing ALTER on CLUSTER_MIRROR ${mirror}`) } });
    expect((await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type === 'PartitionStopRequested')).toEqual([]);
  });

  it('every operation workflow refuses an actor without grants before it does anything: the code, one OperationRefused event each, the mirror untouched', async () => {
    const actor = randomName('nobody');
    const fresh = randomName('acl-new');
    const requests: { [O in Operation]: OperationInputs[O] } = {
      createMirror: { mirror: fresh, sourceCluster: 'src', destinationCluster: 'dst', actor },
      alterMirror: { mirror, acls: { include: ['User:.*'] }, actor },
      startTopics: { mirror, topics: [topic], actor },
      pauseTopics: { mirror, allTopics: true, actor },
      resumeTopics: { mirror, allTopics: true, actor },
      failover: { mirror, allTopics: true, actor },
      promote: { mirror, allTopics: true, actor },
      retryPartitions: { mirror, actor },
      deleteMirror: { mirror, actor },
      failback: { mirror, actor },
    };
    const decisions = async () => (await readStream(t.db, mirrorStreamId(mirror))).filter((e) => e.type !== 'PartitionPositionRecorded').map((e) => e.type);
    const before = await decisions();
    for (const operation of Operations) {
      const refused = await awaitOperation(await startOperation(t.temporal, operation, requests[operation] as never)).then(
        () => undefined,
        (err: unknown) => err as { code?: string; message?: string },
      );
      expect(refused, operation).toMatchObject({ code: 'CLUSTER_MIRROR_AUTHORIZATION_FAILED', message: expect.stringContaining(`${actor} may not run ${operation}`) });
    }
    const refusals = (await readStream(t.db, AUTHORIZATION_STREAM)).filter((e) => e.type === 'OperationRefused' && (e.data as { principal: string }).principal === actor);
    expect(refusals.map((e) => (e.data as { workflow: string }).workflow).sort()).toEqual([...Operations].sort());
    expect(await decisions()).toEqual(before);
    expect(await readStream(t.db, mirrorStreamId(fresh))).toEqual([]);
    expect((await t.db.selectFrom('mirror_partitions').select('state').where('mirror', '=', mirror).execute()).map((r) => r.state)).toEqual(['MIRRORING']);
  });
});
