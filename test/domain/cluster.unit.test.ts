import { describe, expect, it } from 'vitest';
import { decideCluster, evolveCluster, initialCluster } from '../../domain/cluster.ts';
import { parseBootstrap, type ConnectionDescription } from '../../domain/connection.ts';

const plain: ConnectionDescription = { bootstrap: ['127.0.0.1:9092'], securityProtocol: 'PLAINTEXT' };
const sasl: ConnectionDescription = { bootstrap: ['127.0.0.1:9093'], securityProtocol: 'SASL_SSL', saslMechanism: 'scram-sha-512', saslUsername: 'mirror' };

describe('cluster decide/evolve', () => {
  it('registers once, then only changes the connection', () => {
    const events = decideCluster({ type: 'RegisterCluster', cluster: 'east', connection: plain }, initialCluster('east'));
    expect(events).toEqual([{ type: 'ClusterRegistered', data: { cluster: 'east', connection: plain } }]);
    const registered = evolveCluster(initialCluster('east'), events[0]!);
    expect(() => decideCluster({ type: 'RegisterCluster', cluster: 'east', connection: plain }, registered)).toThrowError(
      expect.objectContaining({ code: 'CLUSTER_ALREADY_EXISTS' }),
    );
    const change = decideCluster({ type: 'ChangeClusterConnection', cluster: 'east', connection: sasl }, registered);
    expect(evolveCluster(registered, change[0]!)).toEqual({ name: 'east', connection: sasl });
  });

  it('refuses to change an unknown cluster, bad names and inconsistent security settings', () => {
    expect(() => decideCluster({ type: 'ChangeClusterConnection', cluster: 'east', connection: plain }, initialCluster('east'))).toThrowError(
      expect.objectContaining({ code: 'UNKNOWN_CLUSTER' }),
    );
    expect(() => decideCluster({ type: 'RegisterCluster', cluster: 'a:b', connection: plain }, initialCluster('a:b'))).toThrowError(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() =>
      decideCluster({ type: 'RegisterCluster', cluster: 'east', connection: { ...plain, securityProtocol: 'SASL_PLAINTEXT' } }, initialCluster('east')),
    ).toThrowError(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/needs SASL credentials/) }));
    expect(() => decideCluster({ type: 'RegisterCluster', cluster: 'east', connection: { ...plain, bootstrap: [] } }, initialCluster('east'))).toThrowError(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });

  it('removes a registered cluster no mirror uses; refuses an unknown one and one in use; may register it again', () => {
    const registered = evolveCluster(initialCluster('east'), { type: 'ClusterRegistered', data: { cluster: 'east', connection: plain } });
    expect(() => decideCluster({ type: 'RemoveCluster', cluster: 'east' }, initialCluster('east'))).toThrowError(expect.objectContaining({ code: 'UNKNOWN_CLUSTER' }));
    expect(() => decideCluster({ type: 'RemoveCluster', cluster: 'east' }, registered, ['dr', 'dr2'])).toThrowError(
      expect.objectContaining({ code: 'CLUSTER_IN_USE', message: 'cluster east is used by mirror dr, dr2: delete them first (kmirror delete)' }),
    );
    const removal = decideCluster({ type: 'RemoveCluster', cluster: 'east' }, registered);
    expect(removal).toEqual([{ type: 'ClusterRemoved', data: { cluster: 'east' } }]);
    const removed = evolveCluster(registered, removal[0]!);
    expect(removed).toEqual(initialCluster('east'));
    expect(() => decideCluster({ type: 'RemoveCluster', cluster: 'east' }, removed)).toThrowError(expect.objectContaining({ code: 'UNKNOWN_CLUSTER' }));
    expect(decideCluster({ type: 'RegisterCluster', cluster: 'east', connection: sasl }, removed)).toEqual([{ type: 'ClusterRegistered', data: { cluster: 'east', connection: sasl } }]);
    expect(() => evolveCluster(removed, removal[0]!)).toThrowError(expect.objectContaining({ code: 'EVENT_HISTORY_INVALID' }));
  });

  it('refuses a history that registers twice', () => {
    const event = { type: 'ClusterRegistered', data: { cluster: 'east', connection: plain } } as const;
    expect(() => evolveCluster(evolveCluster(initialCluster('east'), event), event)).toThrowError(expect.objectContaining({ code: 'EVENT_HISTORY_INVALID' }));
  });
});

describe('parseBootstrap', () => {
  it('takes host:port lists (names, IPv4, bracketed IPv6) and refuses anything else, ports outside 1–65535 included', () => {
    expect(parseBootstrap('b1:9092, 10.0.0.2:9093,[::1]:9094')).toEqual(['b1:9092', '10.0.0.2:9093', '[::1]:9094']);
    for (const bad of ['notahostport', '127.0.0.1:99999', 'b1:0', 'b1:', ':9092', '']) {
      expect(() => parseBootstrap(bad, '--bootstrap'), bad).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringContaining('--bootstrap') }));
    }
  });
});
