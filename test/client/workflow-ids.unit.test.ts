// Workflow ids are the "join, never duplicate" contract of docs/workflows.md: the same request gets
// the same id (so a repeat joins the running workflow), a different request a different one.
import { describe, expect, it } from 'vitest';
import { operationWorkflowId } from '../../client/index.ts';

describe('operationWorkflowId', () => {
  it('uses the documented prefixes', () => {
    expect(operationWorkflowId('createMirror', { mirror: 'dr', sourceCluster: 'a', destinationCluster: 'b' })).toBe('create:dr');
    expect(operationWorkflowId('deleteMirror', { mirror: 'dr' })).toBe('delete:dr');
    const hex = /^[0-9a-f]{12}$/;
    for (const [operation, prefix, input] of [
      ['startTopics', 'start', { mirror: 'dr', topics: ['t'] }],
      ['pauseTopics', 'pause', { mirror: 'dr', allTopics: true }],
      ['resumeTopics', 'resume', { mirror: 'dr', topics: ['t'] }],
      ['failover', 'failover', { mirror: 'dr', allTopics: true }],
      ['promote', 'promote', { mirror: 'dr', allTopics: true }],
      ['failback', 'failback', { mirror: 'dr' }],
      ['retryPartitions', 'retry', { mirror: 'dr' }],
      ['alterMirror', 'alter', { mirror: 'dr', acls: { include: ['User:.*'] } }],
    ] as const) {
      const [p, mirror, digest] = operationWorkflowId(operation, input as never).split(':');
      expect([p, mirror]).toEqual([prefix, 'dr']);
      expect(digest).toMatch(hex);
    }
  });

  it('is the same for the same request: who asks, why, and the order of topics do not count', () => {
    const a = operationWorkflowId('startTopics', { mirror: 'dr', topics: ['x', 'y'], actor: 'alice', reason: 'one' });
    const b = operationWorkflowId('startTopics', { mirror: 'dr', topics: ['y', 'x', 'y'], actor: 'bob', reason: 'two' });
    expect(a).toBe(b);
    expect(operationWorkflowId('promote', { mirror: 'dr', allTopics: true, timeoutSeconds: 60 })).toBe(operationWorkflowId('promote', { mirror: 'dr', allTopics: true, timeoutSeconds: 600 }));
  });

  it('differs whenever the request asks for something else', () => {
    const distinct = (ids: string[]) => expect(new Set(ids).size).toBe(ids.length);
    distinct([
      operationWorkflowId('startTopics', { mirror: 'dr', topics: ['x'] }),
      operationWorkflowId('startTopics', { mirror: 'dr', include: ['x'] }),
      operationWorkflowId('startTopics', { mirror: 'dr', include: ['x'], exclude: ['y'] }),
      operationWorkflowId('startTopics', { mirror: 'dr2', topics: ['x'] }),
    ]);
    // A dry run must never join (or be joined by) the real operation.
    distinct([
      operationWorkflowId('failover', { mirror: 'dr', allTopics: true }),
      operationWorkflowId('failover', { mirror: 'dr', allTopics: true, dryRun: true }),
      operationWorkflowId('failover', { mirror: 'dr', topics: ['x'] }),
      operationWorkflowId('failover', { mirror: 'dr', include: ['x'] }),
    ]);
    distinct([
      operationWorkflowId('failback', { mirror: 'dr' }),
      operationWorkflowId('failback', { mirror: 'dr', dryRun: true }),
      operationWorkflowId('failback', { mirror: 'dr', divergent: 'discard' }),
    ]);
    // An override or an accepted loss is recorded as an event: such a retry is its own request.
    distinct([
      operationWorkflowId('retryPartitions', { mirror: 'dr' }),
      operationWorkflowId('retryPartitions', { mirror: 'dr', topics: ['x'] }),
      operationWorkflowId('retryPartitions', { mirror: 'dr', overrideIsrWait: true }),
      operationWorkflowId('retryPartitions', { mirror: 'dr', acceptRecordsLost: true }),
    ]);
    distinct([operationWorkflowId('pauseTopics', { mirror: 'dr', allTopics: true }), operationWorkflowId('pauseTopics', { mirror: 'dr', topics: ['x'] })]);
    // A filter field left out (kept) is not the same request as an empty one (none).
    distinct([
      operationWorkflowId('alterMirror', { mirror: 'dr', acls: { include: ['a'] } }),
      operationWorkflowId('alterMirror', { mirror: 'dr', acls: { include: ['a'], exclude: [] } }),
      operationWorkflowId('alterMirror', { mirror: 'dr', groups: { include: ['a'] } }),
      operationWorkflowId('alterMirror', { mirror: 'dr', acls: { include: [] } }),
      operationWorkflowId('alterMirror', { mirror: 'dr', acls: {} }),
    ]);
  });
});
