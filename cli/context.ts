// What a command needs, opened on first use and closed when it ends: the configuration (env file
// beneath the environment, parsed once), the database, the Temporal client, Kafka clients for the
// registered clusters, and how to print. Commands only parse, call these, and print.
import { userInfo } from 'node:os';
import { ClusterClients } from '../activities/cluster-clients.ts';
import { connectClient, type TemporalClient } from '../client/index.ts';
import { loadConfig, withEnvFile, type Config, type Env } from '../config.ts';
import { createDatabase } from '../db/connect.ts';
import type { Db } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import type { Output } from '../errors-output.ts';
import { authorize, loadGrants } from '../db/acl-store.ts';
import { missingGrants, requirementsOf, type READING_COMMANDS } from '../domain/authorization.ts';

type ReadingCommand = (typeof READING_COMMANDS)[number];

export interface GlobalOptions {
  readonly json?: boolean;
  readonly actor?: string;
  readonly reason?: string;
}

export class CliContext {
  private configValue?: Config;
  private dbValue?: Db;
  private migrated?: Promise<void>;
  private temporalValue?: Promise<TemporalClient>;
  private clientsValue?: ClusterClients;
  private envValue?: Env;

  constructor(
    readonly output: Output,
    readonly options: () => GlobalOptions,
    private readonly explicitEnv: Env = process.env,
  ) {}

  /** The environment with the env file beneath it (read on first use: --help needs none). */
  get env(): Env {
    return (this.envValue ??= withEnvFile(this.explicitEnv).env);
  }

  /** Set by a command that printed its (negative) answer itself: the exit code without an error
   *  line, so --json output stays one object. */
  exitCode = 0;

  /** Fail the command: with --json the answer is already printed — with the error in its `error`
   *  field, as every failing command prints it — so only the exit code is set; otherwise the error
   *  is printed as usual. */
  fail(error: Error): void {
    if (this.json) this.exitCode = 1;
    else throw error;
  }

  get json(): boolean {
    return this.options().json === true;
  }

  /** Who asks: --actor, else the OS user. */
  get actor(): string {
    const actor = this.options().actor;
    if (actor !== undefined) return actor;
    try {
      return userInfo().username;
    } catch {
      return 'unknown';
    }
  }

  get reason(): string | undefined {
    return this.options().reason;
  }

  /** The event metadata of this command's request. */
  get requester(): { actor: string; reason?: string } {
    return { actor: this.actor, ...(this.reason === undefined ? {} : { reason: this.reason }) };
  }

  get config(): Config {
    return (this.configValue ??= loadConfig(this.env));
  }

  /** The Temporal Web UI base address (TEMPORAL_UI_URL), for links. */
  get uiUrl(): string {
    return this.env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
  }

  /** The database, migrated to the latest schema on first use. */
  async db(): Promise<Db> {
    if (this.dbValue === undefined) {
      const db = createDatabase(this.config.databaseUrl, { maxConnections: 4 });
      this.dbValue = db;
      this.migrated = migrateToLatest(db).then(() => undefined);
    }
    await this.migrated;
    return this.dbValue;
  }

  /** With KMIRROR_AUTHORIZATION on, the actor must hold DESCRIBE on the mirror (and READ on
   *  `topics`) to run a reading command; a refusal is recorded (OperationRefused) and thrown as
   *  CLUSTER_MIRROR_AUTHORIZATION_FAILED. Off: nothing is checked. */
  async authorizeRead(command: ReadingCommand, mirror: string, topics: readonly string[] = []): Promise<void> {
    if (!this.config.authorization) return;
    await authorize(await this.db(), { principal: this.actor, workflow: command, mirror, required: requirementsOf(command, mirror, topics) }, this.requester);
  }

  /** The mirrors among `mirrors` the actor may see (DESCRIBE on each; KIP-1279: listing is
   *  filtered by DESCRIBE). Authorization off: all of them. Not a refusal: nothing is recorded. */
  async describable<M extends { readonly name: string }>(mirrors: readonly M[]): Promise<M[]> {
    if (!this.config.authorization) return [...mirrors];
    const { state } = await loadGrants(await this.db());
    return mirrors.filter((m) => missingGrants(state, this.actor, requirementsOf('list', m.name)).length === 0);
  }

  async temporal(): Promise<TemporalClient> {
    return (this.temporalValue ??= connectClient(this.config));
  }

  async clusters(): Promise<ClusterClients> {
    // The database first: two callers at once must not each build (and one leak) a ClusterClients.
    const db = await this.db();
    return (this.clientsValue ??= new ClusterClients(db, this.config.secretKey, { retries: 1, connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000 }));
  }

  print(text: string): void {
    this.output.stdout(text.endsWith('\n') ? text : `${text}\n`);
  }

  printJson(value: unknown): void {
    this.output.stdout(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
  }

  /** A line for people on stderr (progress, notes): never in the way of --json on stdout. */
  note(text: string): void {
    this.output.stderr(text.endsWith('\n') ? text : `${text}\n`);
  }

  async close(): Promise<void> {
    const temporal = this.temporalValue;
    this.temporalValue = undefined;
    await Promise.allSettled([this.clientsValue?.close(), temporal?.then((t) => t.close())]);
    await this.dbValue?.destroy();
  }
}
