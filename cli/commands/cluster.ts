// `kmirror cluster add | list | describe | remove`: the Kafka clusters mirrors read from and write to. The
// connection's credentials are sealed in Postgres (KMIRROR_SECRET_KEY) and never printed; a
// password is read from a file, never from the command line (where `ps` and shell history see it).
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { changeClusterConnection, describeCluster, listClusters, registerCluster, removeCluster, type ClusterDescription } from '../../db/cluster-store.ts';
import { parseBootstrap, type ClusterConnection, type SaslMechanism, type SecurityProtocol } from '../../domain/connection.ts';
import { KmirrorError } from '../../domain/errors.ts';
import { assertClusterName } from '../../domain/names.ts';
import { createKafka } from '../../kafka/connection.ts';
import { kafkaFailure } from '../../kafka/errors.ts';
import type { CliContext } from '../context.ts';
import { table } from '../render.ts';

interface AddOptions {
  bootstrap: string;
  securityProtocol: SecurityProtocol;
  saslMechanism?: SaslMechanism;
  username?: string;
  passwordFile?: string;
  sslCaFile?: string;
  check: boolean;
  replace?: boolean;
}

export function readFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new KmirrorError('INVALID_ARGUMENT', `${what} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {}, { cause: err });
  }
}

function connectionOf(options: AddOptions): ClusterConnection {
  const bootstrap = parseBootstrap(options.bootstrap, '--bootstrap');
  const sasl = options.securityProtocol === 'SASL_PLAINTEXT' || options.securityProtocol === 'SASL_SSL';
  if (sasl && (options.saslMechanism === undefined || options.username === undefined || options.passwordFile === undefined)) {
    throw new KmirrorError('INVALID_ARGUMENT', `--security-protocol ${options.securityProtocol} needs --sasl-mechanism, --username and --password-file`);
  }
  if (!sasl && (options.saslMechanism !== undefined || options.username !== undefined || options.passwordFile !== undefined)) {
    throw new KmirrorError('INVALID_ARGUMENT', `--sasl-mechanism, --username and --password-file need --security-protocol SASL_PLAINTEXT or SASL_SSL`);
  }
  const ssl = options.securityProtocol === 'SSL' || options.securityProtocol === 'SASL_SSL';
  if (!ssl && options.sslCaFile !== undefined) throw new KmirrorError('INVALID_ARGUMENT', '--ssl-ca-file needs --security-protocol SSL or SASL_SSL');
  return {
    bootstrap,
    securityProtocol: options.securityProtocol,
    ...(sasl ? { sasl: { mechanism: options.saslMechanism!, username: options.username!, password: readFile(options.passwordFile!, '--password-file').trim() } } : {}),
    ...(options.sslCaFile !== undefined ? { sslCa: readFile(options.sslCaFile, '--ssl-ca-file') } : {}),
  };
}

/** The cluster answers with these credentials (describeCluster), or CLUSTER_UNREACHABLE /
 *  CLUSTER_AUTHENTICATION_FAILED / CLUSTER_AUTHORIZATION_FAILED (Kafka's ACLs refuse it). */
export async function checkCluster(name: string, connection: ClusterConnection): Promise<{ clusterId: string; brokers: number }> {
  const admin = createKafka(connection, { retries: 1, connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000 }).admin();
  try {
    await admin.connect();
    const described = await admin.describeCluster();
    return { clusterId: described.clusterId, brokers: described.brokers.length };
  } catch (err) {
    const where = `cluster ${name} (${connection.bootstrap.join(',')})`;
    const failure = kafkaFailure(err, where);
    throw failure.code === 'CLUSTER_UNREACHABLE' ? kafkaFailure(err, `${where} does not answer`) : failure;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

function printCluster(ctx: CliContext, c: ClusterDescription, extra: Record<string, unknown> = {}): void {
  if (ctx.json) return ctx.printJson({ ...c, ...extra });
  const lines = [
    `cluster ${c.name}`,
    `  bootstrap          ${c.connection.bootstrap.join(',')}`,
    `  security protocol  ${c.connection.securityProtocol}`,
    ...(c.connection.saslMechanism ? [`  sasl               ${c.connection.saslMechanism} as ${c.connection.saslUsername}`] : []),
    ...Object.entries(extra).map(([k, v]) => `  ${k.padEnd(18)} ${String(v)}`),
    `  registered         ${c.createdAt}${c.updatedAt !== c.createdAt ? ` (connection changed ${c.updatedAt})` : ''}`,
  ];
  ctx.print(lines.join('\n'));
}

export function clusterCommand(ctx: CliContext): Command {
  const cluster = new Command('cluster')
    .description('register, inspect and remove the Kafka clusters mirrors connect (credentials are sealed, never printed)')
    .addHelpText('after', '\nExample:\n  kmirror cluster add east --bootstrap b1:9092,b2:9092\n  kmirror cluster list');

  cluster
    .command('add')
    .description('register a Kafka cluster under a name (checks that it answers first)')
    .argument('<name>', 'cluster name ([a-zA-Z0-9._-], 1-249 characters)')
    .requiredOption('--bootstrap <host:port,...>', 'bootstrap servers')
    .addOption(new Option('--security-protocol <protocol>', 'how to connect').choices(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']).default('PLAINTEXT'))
    .addOption(new Option('--sasl-mechanism <mechanism>', 'SASL mechanism (SASL_* protocols)').choices(['plain', 'scram-sha-256', 'scram-sha-512']))
    .option('--username <user>', 'SASL user name')
    .option('--password-file <file>', 'file holding the SASL password (it is read once and stored encrypted)')
    .option('--ssl-ca-file <file>', 'PEM file of the CA certificates to trust (SSL protocols; default: the system CAs)')
    .option('--no-check', 'store without checking that the cluster answers')
    .option('--replace', 'replace the connection of a cluster that is already registered (credential rotation)')
    .addHelpText('after', '\nExample:\n  kmirror cluster add west --bootstrap b1:9093,b2:9093 --security-protocol SASL_SSL \\\n      --sasl-mechanism scram-sha-512 --username mirror --password-file /run/secrets/west.pw')
    .action(async (name: string, options: AddOptions) => {
      assertClusterName(name);
      const connection = connectionOf(options);
      const checked = options.check ? await checkCluster(name, connection) : undefined;
      const db = await ctx.db();
      const store = options.replace === true ? changeClusterConnection : registerCluster;
      await store(db, ctx.config.secretKey, { cluster: name, connection }, ctx.requester);
      printCluster(ctx, await describeCluster(db, name), checked === undefined ? { checked: false } : { clusterId: checked.clusterId, brokers: checked.brokers });
    });

  cluster
    .command('list')
    .description('list the registered clusters')
    .addHelpText('after', '\nExample:\n  kmirror cluster list --json')
    .action(async () => {
      const clusters = await listClusters(await ctx.db());
      if (ctx.json) return ctx.printJson(clusters);
      if (clusters.length === 0) return ctx.print('no clusters registered (kmirror cluster add --help)');
      ctx.print(table(['NAME', 'BOOTSTRAP', 'PROTOCOL', 'SASL USER'], clusters.map((c) => [c.name, c.connection.bootstrap.join(','), c.connection.securityProtocol, c.connection.saslUsername ?? '-'])));
    });

  cluster
    .command('describe')
    .description('show a registered cluster (without its credentials)')
    .argument('<name>', 'cluster name')
    .addHelpText('after', '\nExample:\n  kmirror cluster describe west')
    .action(async (name: string) => {
      printCluster(ctx, await describeCluster(await ctx.db(), name));
    });

  cluster
    .command('remove')
    .description('forget a registered cluster and delete its sealed credentials (refused while a mirror that is not deleted uses it; the audit log keeps its history)')
    .argument('<name>', 'cluster name')
    .addHelpText('after', '\nExample:\n  kmirror cluster remove old-east --reason "decommissioned"')
    .action(async (name: string) => {
      assertClusterName(name);
      await removeCluster(await ctx.db(), name, ctx.requester);
      if (ctx.json) return ctx.printJson({ cluster: name, removed: true });
      ctx.print(`cluster ${name} removed`);
    });

  return cluster;
}
