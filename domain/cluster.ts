// The cluster aggregate: a named Kafka cluster a mirror reads from or writes to. Only the
// connection's non-secret description is domain state; the credentials are sealed by the store
// (db/cluster-store.ts) and never enter an event.
import { KmirrorError } from './errors.ts';
import { assertClusterName } from './names.ts';
import type { ClusterCommand } from './commands.ts';
import type { ClusterEvent } from './events.ts';
import type { ConnectionDescription } from './connection.ts';

export interface Cluster {
  readonly name: string;
  /** null: not registered. */
  readonly connection: ConnectionDescription | null;
}

export function initialCluster(name: string): Cluster {
  return { name, connection: null };
}

const SASL_PROTOCOLS = new Set(['SASL_PLAINTEXT', 'SASL_SSL']);

function assertConnection(cluster: string, connection: ConnectionDescription): void {
  if (connection.bootstrap.length === 0) throw new KmirrorError('INVALID_CONFIG', `cluster ${cluster}: no bootstrap servers`);
  const sasl = connection.saslMechanism !== undefined;
  if (SASL_PROTOCOLS.has(connection.securityProtocol) !== sasl) {
    throw new KmirrorError(
      'INVALID_CONFIG',
      sasl
        ? `cluster ${cluster}: SASL credentials given but security protocol ${connection.securityProtocol} does not use SASL`
        : `cluster ${cluster}: security protocol ${connection.securityProtocol} needs SASL credentials`,
    );
  }
}

/** `mirrorsUsing`: the mirrors (not deleted) that read from or write to the cluster, for a removal. */
export function decideCluster(command: ClusterCommand, state: Cluster, mirrorsUsing: readonly string[] = []): ClusterEvent[] {
  assertClusterName(command.cluster);
  const { cluster } = command;
  const unknown = () => new KmirrorError('UNKNOWN_CLUSTER', `cluster ${cluster} is not registered`, { cluster });
  if (command.type === 'RemoveCluster') {
    if (state.connection === null) throw unknown();
    if (mirrorsUsing.length > 0) {
      throw new KmirrorError('CLUSTER_IN_USE', `cluster ${cluster} is used by mirror ${mirrorsUsing.join(', ')}: delete ${mirrorsUsing.length > 1 ? 'them' : 'it'} first (kmirror delete)`, { cluster, mirrors: mirrorsUsing.join(',') });
    }
    return [{ type: 'ClusterRemoved', data: { cluster } }];
  }
  assertConnection(cluster, command.connection);
  const data = { cluster, connection: command.connection };
  switch (command.type) {
    case 'RegisterCluster':
      if (state.connection !== null) throw new KmirrorError('CLUSTER_ALREADY_EXISTS', `cluster ${cluster} is already registered`, { cluster });
      return [{ type: 'ClusterRegistered', data }];
    case 'ChangeClusterConnection':
      if (state.connection === null) throw unknown();
      return [{ type: 'ClusterConnectionChanged', data }];
  }
}

export function evolveCluster(state: Cluster, event: ClusterEvent): Cluster {
  const registered = state.connection !== null;
  // Registered again after a removal: a new registration.
  if ((event.type === 'ClusterRegistered') === registered) {
    throw new KmirrorError('EVENT_HISTORY_INVALID', `cluster ${state.name}: ${event.type} cannot be applied (${registered ? 'already registered' : 'not registered'})`, {
      cluster: state.name,
      event: event.type,
    });
  }
  return { name: state.name, connection: event.type === 'ClusterRemoved' ? null : event.data.connection };
}
