// The activities the worker registers, composed over its clients (STYLE 3): the event store, the
// Kafka admin side, the data plane and the runner messenger. Every one passes through atEdge, so
// what leaves an activity is an ApplicationFailure with a code.
import type { DataPlaneConfig } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { ByteBudget } from '../kafka/budget.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ClusterClients } from './cluster-clients.ts';
import { createDataPlaneActivities } from './data-plane.ts';
import { atEdge } from './edge.ts';
import { createEventStoreActivities } from './event-store.ts';
import { createKafkaAdminActivities } from './kafka-admin.ts';
import { createPingActivities } from './ping.ts';
import { createRunnerActivities } from './runner.ts';

export interface ActivityDeps {
  readonly db: Db;
  readonly clients: ClusterClients;
  readonly budget: ByteBudget;
  readonly metrics: Metrics;
  /** KMIRROR_AUTHORIZATION: check ClusterMirror grants in every operation workflow. */
  readonly authorization: boolean;
  readonly dataPlane: DataPlaneConfig;
  /** Names this worker in lease owners. */
  readonly workerIdentity: string;
}

export function createActivities(deps: ActivityDeps) {
  return atEdge({
    ...createPingActivities(),
    ...createEventStoreActivities({ db: deps.db, authorization: deps.authorization }),
    ...createKafkaAdminActivities({ db: deps.db, clients: deps.clients, metrics: deps.metrics }),
    ...createDataPlaneActivities({ db: deps.db, clients: deps.clients, budget: deps.budget, metrics: deps.metrics, config: deps.dataPlane, workerIdentity: deps.workerIdentity }),
    ...createRunnerActivities({ runner: deps.dataPlane.runner }),
  });
}
