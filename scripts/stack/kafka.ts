// Kafka part of the local stack: the source cluster (1..3 KRaft nodes in combined mode; PLAINTEXT and
// SSL for the anonymous super user, SASL_PLAINTEXT and SASL_SSL for the least-privileged `mirror`
// user — SASL_SSL takes SCRAM users too —, StandardAuthorizer)
// and the destination cluster (1..3 nodes, secured like a real one: SASL_PLAINTEXT/PLAIN on every
// listener, SCRAM-SHA-256/512 too for users added at run time, and the StandardAuthorizer; `app`
// gets an application's grants, `mirror` none). A cluster keeps the node
// count it was formatted with until `up --source-nodes/--dest-nodes` re-formats it (its data is
// discarded). Jars come from Maven Central through Maven.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs, { type AclEntry } from 'kafkajs';
import type { ClusterConnection } from '../../domain/connection.ts';
import { createKafka } from '../../kafka/connection.ts';
import { ensureDir, prerequisite, requireCommand, requirePortsFree, run, runningPid, spawnDaemon, stopDaemon, waitUntil } from './proc.ts';
import { ensureSecret, ensureStackSecrets, secretsDir } from './secrets.ts';
import {
  cacheDir,
  DEST_APP_USER,
  DEST_SUPER_USER,
  brokerPort,
  controllerPort,
  KAFKA_VERSION,
  MAX_NODES,
  MIRROR_USER,
  projectRoot,
  sourceSaslPort,
  sourceSaslSslPort,
  sourceSslPort,
  stackDir,
} from './topology.ts';
import { ensureStackTls } from './tls.ts';

// kafkajs is CommonJS and Node's named-export detection misses its ACL enums: take them from the default export.
const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;

export const kafkaLibs = join(cacheDir, `kafka-${KAFKA_VERSION}`, 'libs');
const kafkaDir = join(stackDir, 'kafka');
const log4jConfig = join(kafkaDir, 'log4j2.properties');
const BROKER_USER = 'broker';

export type ClusterName = 'source' | 'dest';

interface Node {
  cluster: ClusterName;
  id: number;
  dir: string;
  brokerPort: number;
  /** The source's SASL_PLAINTEXT listener (the `mirror` user); unused on the destination, whose one listener is SASL. */
  saslPort: number;
  /** The source's TLS listeners: SSL (ANONYMOUS) and SASL_SSL (`mirror`, SCRAM users); unused on the destination. */
  sslPort: number;
  saslSslPort: number;
  controllerPort: number;
}

function nodesOf(cluster: ClusterName, count: number): Node[] {
  return Array.from({ length: count }, (_, i) => ({
    cluster,
    id: i + 1,
    dir: join(kafkaDir, `${cluster}-${i + 1}`),
    brokerPort: brokerPort(cluster, i),
    saslPort: sourceSaslPort(i),
    sslPort: sourceSslPort(i),
    saslSslPort: sourceSaslSslPort(i),
    controllerPort: controllerPort(cluster, i),
  }));
}

const pidFile = (node: Node): string => join(node.dir, 'kafka.pid');
const logFile = (node: Node): string => join(node.dir, 'kafka.log');
const nodesFile = (cluster: ClusterName): string => join(kafkaDir, `${cluster}.nodes`);

/** Node count a cluster was formatted with (its quorum), if formatted. (A source formatted before
 *  the count was recorded has one node.) */
export function formattedNodes(cluster: ClusterName): number | undefined {
  if (existsSync(nodesFile(cluster))) return Number.parseInt(readFileSync(nodesFile(cluster), 'utf8'), 10);
  return cluster === 'source' && existsSync(join(kafkaDir, 'source-1', 'data', 'meta.properties')) ? 1 : undefined;
}

export function javaCommand(): string {
  const javaHome = process.env.JAVA_HOME;
  if (javaHome && existsSync(join(javaHome, 'bin', 'java'))) return join(javaHome, 'bin', 'java');
  return requireCommand('java', 'install a Java 17+ runtime (Debian: openjdk-17-jre-headless) or set JAVA_HOME');
}

/** Resolve the Kafka jars into the cache (once; Maven keeps its own ~/.m2 cache too). */
export function ensureKafkaJars(log: (line: string) => void): string {
  const marker = join(kafkaLibs, '.complete');
  if (existsSync(marker)) return kafkaLibs;
  const mvn = requireCommand('mvn', 'install Apache Maven (Debian: maven); it resolves the Kafka jars from Maven Central');
  log(`kafka: resolving Apache Kafka ${KAFKA_VERSION} jars from Maven Central…`);
  rmSync(kafkaLibs, { recursive: true, force: true });
  run(mvn, [
    '-q',
    '-B',
    '-f',
    join(projectRoot, 'scripts', 'stack', 'kafka-pom.xml'),
    `-Dkafka.version=${KAFKA_VERSION}`,
    'dependency:copy-dependencies',
    `-DoutputDirectory=${kafkaLibs}`,
    '-DincludeScope=runtime',
  ]);
  writeFileSync(marker, `${new Date().toISOString()}\n`);
  return kafkaLibs;
}

/** A connection as Java client properties (`key=value` lines, each key behind `prefix`). Holds the password. */
export function javaClientLines(connection: ClusterConnection, prefix = ''): string[] {
  const lines = [`${prefix}bootstrap.servers=${connection.bootstrap.join(',')}`, `${prefix}security.protocol=${connection.securityProtocol}`];
  if (connection.sasl) {
    lines.push(
      `${prefix}sasl.mechanism=${connection.sasl.mechanism.toUpperCase()}`,
      `${prefix}sasl.jaas.config=org.apache.kafka.common.security.${connection.sasl.mechanism === 'plain' ? 'plain.PlainLoginModule' : 'scram.ScramLoginModule'} required username="${connection.sasl.username}" password="${connection.sasl.password}";`,
    );
  }
  return lines;
}

/** Java client properties for a connection, for the Kafka tools' --command-config and the like:
 *  written to .stack/clients/<name>.properties (mode 0600: it holds the password). */
export function clientProperties(name: string, connection: ClusterConnection, extra: Record<string, string> = {}): string {
  const dir = ensureDir(join(stackDir, 'clients'), 0o700);
  const lines = [...javaClientLines(connection), ...Object.entries(extra).map(([k, v]) => `${k}=${v}`)];
  const file = join(dir, `${name}.properties`);
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return file;
}

/** JVM command line for one of the Kafka jars' main classes. */
export function kafkaJava(mainClass: string, args: readonly string[], heap = '1g', log4j = log4jConfig): { command: string; args: string[] } {
  return {
    command: javaCommand(),
    args: [
      `-Xmx${heap}`,
      '-Xms128m',
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      '-Djava.net.preferIPv4Stack=true',
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      `${kafkaLibs}/*`,
      mainClass,
      ...args,
    ],
  };
}

function writeLog4j(): void {
  ensureDir(kafkaDir);
  writeFileSync(
    log4jConfig,
    [
      'status = warn',
      'appender.out.type = Console',
      'appender.out.name = OUT',
      'appender.out.layout.type = PatternLayout',
      'appender.out.layout.pattern = [%d] %p %m (%c)%n',
      'rootLogger.level = WARN',
      'rootLogger.appenderRef.out.ref = OUT',
      // Lines that `status` and start-up waits rely on.
      'logger.server.name = kafka.server',
      'logger.server.level = INFO',
      'logger.statechange.name = state.change.logger',
      'logger.statechange.level = OFF',
      '',
    ].join('\n'),
  );
}

function jaas(users: Record<string, string>, self: string): string {
  const entries = Object.entries(users)
    .map(([user, password]) => `user_${user}="${password}"`)
    .join(' ');
  return `org.apache.kafka.common.security.plain.PlainLoginModule required username="${self}" password="${users[self] ?? ''}" ${entries};`;
}

function serverProperties(node: Node, all: Node[]): string {
  const voters = all.map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(',');
  const rf = Math.min(3, all.length);
  const common = [
    'process.roles=broker,controller',
    `node.id=${node.id}`,
    `controller.quorum.voters=${voters}`,
    'controller.listener.names=CONTROLLER',
    `log.dirs=${join(node.dir, 'data')}`,
    'num.partitions=1',
    `default.replication.factor=${rf}`,
    `offsets.topic.replication.factor=${rf}`,
    `transaction.state.log.replication.factor=${rf}`,
    `transaction.state.log.min.isr=${Math.min(2, rf)}`,
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    // Short cleaner/deletion delays so retention and compaction are observable in tests.
    'log.cleaner.backoff.ms=1000',
    'log.segment.delete.delay.ms=1000',
    'log.retention.check.interval.ms=5000',
    'num.network.threads=3',
    'num.io.threads=4',
  ];
  if (node.cluster === 'source') {
    // PLAINTEXT is ANONYMOUS, a super user: what every test, tool and MirrorMaker 2 use. The SASL
    // listener authenticates `mirror`, which the StandardAuthorizer holds to its ACLs alone.
    // The TLS listeners (the stack's own CA): SSL is ANONYMOUS as PLAINTEXT is; SASL_SSL takes
    // `mirror` (PLAIN) and SCRAM users added at run time (kafka-configs).
    const sourceUsers = { [MIRROR_USER]: ensureStackSecrets().mirrorPassword };
    return [
      ...common,
      `listeners=PLAINTEXT://127.0.0.1:${node.brokerPort},SASL_PLAINTEXT://127.0.0.1:${node.saslPort},SSL://127.0.0.1:${node.sslPort},SASL_SSL://127.0.0.1:${node.saslSslPort},CONTROLLER://127.0.0.1:${node.controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${node.brokerPort},SASL_PLAINTEXT://127.0.0.1:${node.saslPort},SSL://127.0.0.1:${node.sslPort},SASL_SSL://127.0.0.1:${node.saslSslPort}`,
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      'sasl.enabled.mechanisms=PLAIN',
      `listener.name.sasl_plaintext.plain.sasl.jaas.config=${jaas(sourceUsers, MIRROR_USER)}`,
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${ensureStackTls().brokerKeystore}`,
      'listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
      `listener.name.sasl_ssl.plain.sasl.jaas.config=${jaas(sourceUsers, MIRROR_USER)}`,
      'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'super.users=User:ANONYMOUS',
      'allow.everyone.if.no.acl.found=false',
      '',
    ].join('\n');
  }
  const { destKmirrorPassword, destAppPassword, mirrorPassword } = ensureStackSecrets();
  const users = {
    [BROKER_USER]: ensureSecret(join(secretsDir, 'dest-broker.password')),
    [DEST_SUPER_USER]: destKmirrorPassword,
    [DEST_APP_USER]: destAppPassword,
    [MIRROR_USER]: mirrorPassword,
  };
  return [
    ...common,
    `listeners=SASL_PLAINTEXT://127.0.0.1:${node.brokerPort},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    `advertised.listeners=SASL_PLAINTEXT://127.0.0.1:${node.brokerPort}`,
    'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT',
    'inter.broker.listener.name=SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=PLAIN',
    // The clients' listener takes SCRAM too (users added at run time with kafka-configs).
    'listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'sasl.mechanism.inter.broker.protocol=PLAIN',
    'sasl.mechanism.controller.protocol=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${jaas(users, BROKER_USER)}`,
    `listener.name.controller.plain.sasl.jaas.config=${jaas(users, BROKER_USER)}`,
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    `super.users=User:${BROKER_USER};User:${DEST_SUPER_USER}`,
    'allow.everyone.if.no.acl.found=false',
    '',
  ].join('\n');
}

function clusterId(cluster: ClusterName): string {
  const file = join(kafkaDir, `${cluster}.cluster-id`);
  if (!existsSync(file)) {
    ensureDir(kafkaDir);
    // base64url, as Kafka's own ids; never starting with '-', which the storage tool's argument
    // parser takes for an option (1 fresh stack in 64 failed to format).
    let id: string;
    do id = randomBytes(16).toString('base64url');
    while (id.startsWith('-'));
    writeFileSync(file, id);
  }
  return readFileSync(file, 'utf8').trim();
}

/** The log directories of a cluster's nodes that exist (benchmarks watch deletions finish there). */
export function dataDirs(cluster: ClusterName): string[] {
  return nodesOf(cluster, MAX_NODES)
    .map((n) => join(n.dir, 'data'))
    .filter((d) => existsSync(d));
}

export function runningNodes(cluster: ClusterName): number {
  return brokerPids(cluster).length;
}

/** Process ids of the cluster's running nodes. */
export function brokerPids(cluster: ClusterName): number[] {
  return nodesOf(cluster, MAX_NODES).flatMap((n) => runningPid(pidFile(n)) ?? []);
}

/** The destination as its ordinary application user `app` (what a producer of the new primary is). */
export function appConnection(nodeCount = formattedNodes('dest') ?? 1): ClusterConnection {
  const { destAppPassword } = ensureStackSecrets();
  return { ...connectionFor('dest', nodeCount), sasl: { mechanism: 'plain', username: DEST_APP_USER, password: destAppPassword } };
}

/** A local cluster as the least-privileged `mirror` user (the source through its SASL listener):
 *  it may do only what the ACLs granted to User:mirror allow (none unless a test grants them). */
export function mirrorUserConnection(cluster: ClusterName, nodeCount = formattedNodes(cluster) ?? 1): ClusterConnection {
  const sasl = { mechanism: 'plain' as const, username: MIRROR_USER, password: ensureStackSecrets().mirrorPassword };
  if (cluster === 'dest') return { ...connectionFor('dest', nodeCount), sasl };
  return { bootstrap: nodesOf('source', nodeCount).map((n) => `127.0.0.1:${n.saslPort}`), securityProtocol: 'SASL_PLAINTEXT', sasl };
}

/** How kmirror reaches a local cluster (default: every node it was formatted with). */
export function connectionFor(cluster: ClusterName, nodeCount = formattedNodes(cluster) ?? 1): ClusterConnection {
  const bootstrap = nodesOf(cluster, nodeCount).map((n) => `127.0.0.1:${n.brokerPort}`);
  if (cluster === 'source') return { bootstrap, securityProtocol: 'PLAINTEXT' };
  const { destKmirrorPassword } = ensureStackSecrets();
  return {
    bootstrap,
    securityProtocol: 'SASL_PLAINTEXT',
    sasl: { mechanism: 'plain', username: DEST_SUPER_USER, password: destKmirrorPassword },
  };
}

async function clusterAnswers(cluster: ClusterName, nodeCount: number): Promise<boolean> {
  const admin = createKafka(connectionFor(cluster, nodeCount), { retries: 0, connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000 }).admin();
  try {
    await admin.connect();
    const described = await admin.describeCluster();
    return described.brokers.length === nodeCount && described.controller !== null;
  } finally {
    await admin.disconnect();
  }
}

/** What an ordinary application may do on the destination, granted to the `app` user: read, write,
 *  describe and create every topic, read and describe every group (LITERAL '*', ALLOW, any host). */
const appGrant = (resourceType: AclEntry['resourceType'], operation: AclEntry['operation']): AclEntry => ({
  resourceType,
  resourceName: '*',
  resourcePatternType: ResourcePatternTypes.LITERAL,
  principal: `User:${DEST_APP_USER}`,
  host: '*',
  operation,
  permissionType: AclPermissionTypes.ALLOW,
});
const appGrants: readonly AclEntry[] = [
  appGrant(AclResourceTypes.TOPIC, AclOperationTypes.READ),
  appGrant(AclResourceTypes.TOPIC, AclOperationTypes.WRITE),
  appGrant(AclResourceTypes.TOPIC, AclOperationTypes.DESCRIBE),
  appGrant(AclResourceTypes.TOPIC, AclOperationTypes.CREATE),
  appGrant(AclResourceTypes.GROUP, AclOperationTypes.READ),
  appGrant(AclResourceTypes.GROUP, AclOperationTypes.DESCRIBE),
];

/** Create the `app` user's grants that the destination lacks (as the kmirror super user); returns
 *  how many were created. Idempotent: existing ACLs are described first and not created again. */
export async function ensureDestAppAcls(nodeCount: number): Promise<number> {
  const admin = createKafka(connectionFor('dest', nodeCount), { retries: 3 }).admin();
  await admin.connect();
  try {
    const existing = await admin.describeAcls({
      resourceType: AclResourceTypes.ANY,
      resourceName: '*',
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: `User:${DEST_APP_USER}`,
      host: '*',
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ALLOW,
    });
    const missing = appGrants.filter(
      (grant) =>
        !existing.resources.some(
          (r) =>
            r.resourceType === grant.resourceType &&
            r.resourceName === grant.resourceName &&
            r.resourcePatternType === grant.resourcePatternType &&
            r.acls.some((a) => a.principal === grant.principal && a.host === grant.host && a.operation === grant.operation && a.permissionType === grant.permissionType),
        ),
    );
    if (missing.length > 0) await admin.createAcls({ acl: [...missing] });
    return missing.length;
  } finally {
    await admin.disconnect();
  }
}

async function grantApp(nodeCount: number, log: (line: string) => void): Promise<void> {
  const created = await ensureDestAppAcls(nodeCount);
  if (created > 0) log(`kafka dest: granted ${DEST_APP_USER} ${created} ACL(s) (topics: read/write/describe/create; groups: read/describe)`);
}

export async function startCluster(cluster: ClusterName, nodeCount: number, log: (line: string) => void): Promise<void> {
  const nodes = nodesOf(cluster, nodeCount);
  const formatted = formattedNodes(cluster);
  if (formatted !== undefined && formatted !== nodeCount) {
    if (runningNodes(cluster) > 0) {
      throw prerequisite(`kafka ${cluster} is running with ${formatted} node(s); run \`npm run stack -- down --only ${cluster}\` before \`up --${cluster}-nodes ${nodeCount}\``);
    }
    log(`kafka ${cluster}: re-formatting for ${nodeCount} node(s) (was ${formatted}); its data is discarded`);
    for (const n of nodesOf(cluster, MAX_NODES)) rmSync(n.dir, { recursive: true, force: true });
    rmSync(nodesFile(cluster), { force: true });
  }
  if (nodes.every((n) => runningPid(pidFile(n)) !== undefined)) {
    await waitUntil(`kafka ${cluster}`, () => clusterAnswers(cluster, nodeCount), { timeoutMs: 60_000, logFile: logFile(nodes[0]!) });
    if (cluster === 'dest') await grantApp(nodeCount, log);
    return;
  }
  ensureKafkaJars(log);
  writeLog4j();
  const id = clusterId(cluster);
  for (const node of nodes) {
    if (runningPid(pidFile(node)) !== undefined) continue;
    await requirePortsFree(`kafka ${cluster} node ${node.id}`, cluster === 'source' ? [node.brokerPort, node.saslPort, node.sslPort, node.saslSslPort, node.controllerPort] : [node.brokerPort, node.controllerPort]);
    ensureDir(node.dir);
    const props = join(node.dir, 'server.properties');
    writeFileSync(props, serverProperties(node, nodes), { mode: 0o600 });
    if (!existsSync(join(node.dir, 'data', 'meta.properties'))) {
      const format = kafkaJava('kafka.tools.StorageTool', ['format', '-t', id, '-c', props, '--ignore-formatted'], '256m');
      run(format.command, format.args);
    }
  }
  writeFileSync(nodesFile(cluster), String(nodeCount));
  log(`kafka ${cluster}: starting ${nodeCount} node(s)…`);
  const heap = process.env.KMIRROR_KAFKA_HEAP ?? '1g';
  let firstPid = 0;
  for (const node of nodes) {
    if (runningPid(pidFile(node)) !== undefined) continue;
    const java = kafkaJava('kafka.Kafka', [join(node.dir, 'server.properties')], heap);
    firstPid = spawnDaemon({ command: java.command, args: java.args, logFile: logFile(node), pidFile: pidFile(node) });
  }
  await waitUntil(`kafka ${cluster}`, () => clusterAnswers(cluster, nodeCount), {
    timeoutMs: 120_000,
    logFile: logFile(nodes[0]!),
    ...(firstPid ? { pid: firstPid } : {}),
  });
  if (cluster === 'dest') await grantApp(nodeCount, log);
}

export async function stopCluster(cluster: ClusterName): Promise<number> {
  let stopped = 0;
  const nodes = nodesOf(cluster, MAX_NODES);
  const results = await Promise.all(nodes.map((n) => stopDaemon(pidFile(n), 30_000)));
  for (const r of results) if (r) stopped++;
  return stopped;
}

/** Stop one node (SIGTERM: a controlled shutdown) — for drills that take a broker away. Restart it
 *  with startCluster, which starts the nodes that are not running. */
export async function stopNode(cluster: ClusterName, nodeId: number): Promise<boolean> {
  const node = nodesOf(cluster, MAX_NODES).find((n) => n.id === nodeId);
  if (node === undefined) throw prerequisite(`kafka ${cluster} has no node ${nodeId}`);
  return stopDaemon(pidFile(node), 30_000);
}

/** Freeze (SIGSTOP) or thaw (SIGCONT) one node — for drills with a replica that stops answering
 *  without leaving (a long GC pause, a stalled disk). Returns false when it is not running. */
export function pauseNode(cluster: ClusterName, nodeId: number, paused: boolean): boolean {
  const node = nodesOf(cluster, MAX_NODES).find((n) => n.id === nodeId);
  if (node === undefined) throw prerequisite(`kafka ${cluster} has no node ${nodeId}`);
  const pid = runningPid(pidFile(node));
  if (pid === undefined) return false;
  process.kill(pid, paused ? 'SIGSTOP' : 'SIGCONT');
  return true;
}

export function wipeKafka(): void {
  if (!existsSync(kafkaDir)) return;
  for (const entry of readdirSync(kafkaDir)) rmSync(join(kafkaDir, entry), { recursive: true, force: true });
}
