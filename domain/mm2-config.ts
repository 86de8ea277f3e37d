// Moving from MirrorMaker 2: turn a dedicated-mode MirrorMaker 2 config (Kafka's
// connect-mirror-maker.properties format) into a plan for kmirror — the clusters to register, one
// mirror per enabled flow with its topic and group filters, and every setting kmirror does not
// carry over, with the reason. Pure: it gets the file's text, reads no file and contacts nothing;
// cli/commands/import-mm2.ts carries the plan out.
//
// Contract:
//  - MirrorMaker 2's own precedence: a flow's `A->B.<setting>` over the top-level `<setting>` over
//    MM2's default; a cluster's `<alias>.<security setting>` over the top-level one (MM2 gives
//    top-level client settings to every cluster); a legacy `*.blacklist` is read like `*.exclude`,
//    and `*.exclude` wins when both are set (as Kafka's translateDeprecatedConfigs does).
//  - A config kmirror cannot follow faithfully (no enabled flow, unknown alias, missing bootstrap,
//    a SASL mechanism other than PLAIN/SCRAM, …) is INVALID_ARGUMENT naming the key: nothing is
//    guessed. A flow's mirror name that is not legal is INVALID_CLUSTER_MIRROR_NAME.
//  - Every other key of the file is either carried into the plan or listed in notCarried, except
//    the keys of disabled flows and of clusters no enabled flow uses (MM2 does not use them either).
//  - Secrets appear only in clusters[].connection.sasl.password: notCarried shows "[redacted]" for
//    any secret-looking key, and no error message quotes a secret key's value.
import { parse } from 'dot-properties';
import { parseBootstrap, type ClusterConnection, type SaslMechanism, type SecurityProtocol } from './connection.ts';
import { KmirrorError, isKmirrorError } from './errors.ts';
import { assertClusterName, assertMirrorName } from './names.ts';

export interface Mm2ClusterPlan {
  /** MM2 cluster alias, used as the kmirror cluster name. */
  readonly alias: string;
  /** bootstrap, securityProtocol, sasl {mechanism, username, password} from sasl.jaas.config, and
   *  sslCa when the truststore is PEM certificates written in the file (ssl.truststore.certificates). */
  readonly connection: ClusterConnection;
  /** Only when <alias>.ssl.truststore.type=PEM: the truststore location (the CLI reads the file). */
  readonly sslCaFile?: string;
}

export interface Mm2MirrorPlan {
  /** `${source}-to-${destination}` */
  readonly name: string;
  readonly source: string;
  readonly destination: string;
  /** Topic regexes (MM2 `topics`). */
  readonly include: readonly string[];
  /** MM2 `topics.exclude` (or legacy `topics.blacklist`). */
  readonly exclude: readonly string[];
  /** Whole-name regexes of the consumer groups whose offsets are synced; include is [] when the
   *  flow's sync.group.offsets.enabled is false. */
  readonly groups: { readonly include: readonly string[]; readonly exclude: readonly string[] };
  /** Principals whose topic ACLs are synced: every one (`.*`) when the flow's
   *  sync.topic.acls.enabled is true (MirrorMaker 2's default), none when false. */
  readonly acls: { readonly include: readonly string[] };
}

export interface Mm2NotCarried {
  /** The property name as written. */
  readonly key: string;
  /** The value, or "[redacted]" for any secret. */
  readonly value: string;
  /** One sentence an operator can act on. */
  readonly reason: string;
}

export interface Mm2ImportPlan {
  /** Only clusters used by an enabled flow, in the order of `clusters`. */
  readonly clusters: readonly Mm2ClusterPlan[];
  /** One per enabled flow A->B (source, then destination, in the order of `clusters`). */
  readonly mirrors: readonly Mm2MirrorPlan[];
  /** Sorted by key. */
  readonly notCarried: readonly Mm2NotCarried[];
}

const IDENTITY_POLICY = 'org.apache.kafka.connect.mirror.IdentityReplicationPolicy';
const DEFAULT_POLICY = 'org.apache.kafka.connect.mirror.DefaultReplicationPolicy';

/** MirrorMaker 2's defaults for the per-flow settings kmirror carries (DefaultTopicFilter,
 *  DefaultGroupFilter, MirrorCheckpointConfig, MirrorConnectorConfig). */
const MM2_DEFAULTS = {
  topics: '.*',
  'topics.exclude': '.*[\\-\\.]internal, .*\\.replica, __.*',
  groups: '.*',
  'groups.exclude': 'console-consumer-.*, connect-.*, __.*',
  'sync.group.offsets.enabled': 'false',
  'replication.policy.class': DEFAULT_POLICY,
} as const;

/** Legacy names MM2 still reads, with the name that replaced them. */
const LEGACY: ReadonlyMap<string, string> = new Map([
  ['topics.blacklist', 'topics.exclude'],
  ['groups.blacklist', 'groups.exclude'],
]);

/** Settings a flow may override: the plan reads them per flow. */
const FLOW_SETTINGS: ReadonlySet<string> = new Set([...Object.keys(MM2_DEFAULTS), ...LEGACY.keys()]);

/** Client security settings the plan reads per cluster (own, else top-level). */
const SECURITY_SETTINGS: ReadonlySet<string> = new Set([
  'security.protocol',
  'sasl.mechanism',
  'sasl.jaas.config',
  'ssl.truststore.type',
  'ssl.truststore.location',
  'ssl.truststore.certificates',
]);

const PROTOCOLS: readonly SecurityProtocol[] = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];
const MECHANISMS: ReadonlyMap<string, SaslMechanism> = new Map([
  ['PLAIN', 'plain'],
  ['SCRAM-SHA-256', 'scram-sha-256'],
  ['SCRAM-SHA-512', 'scram-sha-512'],
]);

const SECRET = /password|secret|jaas|token|key$/i;
const REDACTED = '[redacted]';

const INTERNAL_TOPICS = 'kmirror keeps offsets equal, so it needs no offset-sync, checkpoint or heartbeat topics: consumers read the same offsets on the destination.';
const CONNECT_TOPICS = 'kmirror is not built on Kafka Connect (its state lives in Postgres and Temporal), so it has no Connect config, offset or status topics.';
const REPLICATION_FACTOR = "kmirror mirror topics take the source topic's partition count, configs and replication factor (capped by the destination's broker count); internal topics do not exist.";
const TRUSTSTORE = 'kmirror takes a PEM CA file: convert the truststore with keytool/openssl and use `kmirror cluster add --ssl-ca-file` (or ssl.truststore.type = PEM here).';
const MTLS = 'mTLS client certificates are not supported yet: the cluster must let kmirror in with SASL or without a client certificate.';
const CLIENTS = 'kmirror tunes its own Kafka clients, so MirrorMaker 2 client overrides are not carried over.';
const UNKNOWN = 'not a MirrorMaker 2 setting kmirror knows: check whether your migration depends on it.';

/** Reasons by key (a top-level key, or what follows `<alias>.` or `A->B.`), first match wins: the
 *  internal-topic rules come before the replication-factor one so their factors say why. */
const RULES: readonly (readonly [RegExp, string])[] = [
  [/^tasks\.max$/, 'kmirror spreads partition copies over its workers itself: size that with the worker settings KMIRROR_MIN_COPIES and KMIRROR_PARTITIONS_PER_COPIER.'],
  [/^(checkpoints\.topic|heartbeats\.topic|offset-syncs\.topic)\.|^offset-syncs\.|^emit\.|^offset\.lag\.max$/, INTERNAL_TOPICS],
  [/^(offset|config|status)\.storage\./, CONNECT_TOPICS],
  [/(^|\.)replication\.factor$/, REPLICATION_FACTOR],
  [/^sync\.topic\.configs\.|^config\.propert(y|ies)\./, "kmirror always keeps a mirror topic's configs in step with its source topic's, minus a fixed list (replication throttles, min.insync.replicas, unclean leader election, the timestamp type and bounds): it cannot be turned off or given another exclude list."],
  [/^sync\.topic\.acls\./, 'how often kmirror syncs ACLs is a worker setting (KMIRROR_DISCOVERY_INTERVAL_MS); which principals are synced follows sync.topic.acls.enabled.'],
  [/^refresh\.topics\./, 'how often kmirror looks for new topics is a worker setting: KMIRROR_DISCOVERY_INTERVAL_MS.'],
  [/^refresh\.groups\.|^sync\.group\.offsets\.interval\.seconds$/, 'how often kmirror syncs group offsets is a worker setting: KMIRROR_GROUP_SYNC_INTERVAL_MS.'],
  [/^replication\.policy\.separator$/, 'kmirror keeps topic names, so there is no separator to set.'],
  [/^(topic|group)\.filter\.class$/, 'custom filter classes are not supported: kmirror selects topics and groups by the topics and groups regexes only.'],
  [/^((source|target)\.)?(consumer|producer|admin)\.|^(source|target)\.cluster\.|^client\.id$/, CLIENTS],
  [/^dedicated\.mode\./, "MirrorMaker 2's dedicated-mode settings have no counterpart: kmirror workers coordinate through Temporal."],
  [/^ssl\.(keystore|key)\./, MTLS],
  [/^ssl\.truststore\./, TRUSTSTORE],
  [/^ssl\./, "kmirror uses Node.js's TLS defaults (protocol versions, cipher suites, host-name verification)."],
  [/^sasl\./, 'kmirror supports SASL PLAIN and SCRAM with the username and password of sasl.jaas.config only.'],
  [/^(key|value|header)\.converter(\.|$)/, 'kmirror copies records byte for byte, so converters do not apply.'],
  [/^config\.providers(\.|$)/, 'kmirror does not resolve config providers: values are taken as written in this file.'],
  [/^(rest\.|listeners$|plugin\.path$|exactly\.once\.|offset\.flush\.)/, 'a Kafka Connect worker setting: kmirror is not built on Kafka Connect.'],
];

interface Setting {
  /** The key as written. */
  readonly key: string;
  readonly value: string;
}

interface Flow {
  readonly source: string;
  readonly destination: string;
}

/** A key of the file split by where MM2 reads it from. */
type Scope = { readonly kind: 'top'; readonly name: string } | { readonly kind: 'cluster'; readonly alias: string; readonly name: string } | { readonly kind: 'flow'; readonly flow: Flow; readonly name: string };

/** What the planning collects: keys taken into the plan, and the notCarried entries so far. */
interface Ledger {
  readonly props: ReadonlyMap<string, string>;
  readonly carried: Set<string>;
  readonly notes: Map<string, Mm2NotCarried>;
  /** config.providers is set: a `${…}` in a carried value is a placeholder kmirror cannot resolve. */
  readonly providers: boolean;
}

export function planMm2Import(text: string): Mm2ImportPlan {
  const props = propertiesOf(text);
  const ledger: Ledger = { props, carried: new Set(), notes: new Map(), providers: props.has('config.providers') };
  const aliases = clustersOf(ledger);
  const flows = withoutConflictingFlows(ledger, enabledFlows(ledger, aliases));
  const used = aliases.filter((alias) => flows.some((f) => f.source === alias || f.destination === alias));
  const clusters = used.map((alias) => planCluster(ledger, alias));
  const mirrors = planMirrors(ledger, flows);
  for (const [key, value] of props) {
    if (ledger.carried.has(key) || ledger.notes.has(key)) continue;
    const reason = leftoverReason(scopeOf(key, aliases), flows, used);
    if (reason !== undefined) note(ledger, { key, value }, reason);
  }
  const notCarried = [...ledger.notes.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { clusters, mirrors, notCarried };
}

/**
 * Flows that would collide under kmirror's naming are left out, in file order, and listed with the
 * reason. MirrorMaker 2 renames (`A.<topic>` on B), so any flow graph works there; an
 * offset-preserving mirror keeps the name, so (1) a cluster can receive from one source only — two
 * sources' same-named topics would land in one topic — and (2) no flow may close a cycle (A->B with
 * B->A, Kafka's sample config and the docs' active/active setup; A->B->C->A), which would copy
 * topics back into their own source. Chains (A->B->C) are fine. When roles swap, `kmirror failover`
 * then `kmirror failback` reverses a mirror.
 */
function withoutConflictingFlows(ledger: Ledger, flows: readonly Flow[]): Flow[] {
  const kept: Flow[] = [];
  const name = (f: Flow): string => `${f.source}-to-${f.destination}`;
  const reaches = (from: string, to: string, seen = new Set<string>()): boolean =>
    from === to || kept.some((k) => k.source === from && !seen.has(k.destination) && (seen.add(k.destination), reaches(k.destination, to, seen)));
  for (const m of flows) {
    const feeder = kept.find((k) => k.destination === m.destination);
    const cycle = feeder === undefined && reaches(m.destination, m.source);
    if (feeder === undefined && !cycle) {
      kept.push(m);
      continue;
    }
    const why =
      feeder !== undefined
        ? `${m.destination} already receives ${feeder.source}'s topics (mirror ${name(feeder)}) under their own names, and ${m.source}'s same-named topics would land in them`
        : `${m.destination} already sends its topics to ${m.source} (through the flows imported before), so ${name(m)} would copy topics back into their own source`;
    const key = `${m.source}->${m.destination}.enabled`;
    ledger.notes.set(key, { key, value: 'true', reason: `not imported: kmirror keeps topic names and offsets, and ${why}; a topic is mirrored one way at a time — when roles swap, \`kmirror failover\` then \`kmirror failback\` reverses a mirror` });
  }
  return kept;
}

function invalid(message: string): KmirrorError {
  return new KmirrorError('INVALID_ARGUMENT', `MirrorMaker 2 config: ${message}`);
}

/** The file's key/value pairs. dot-properties follows java.util.Properties (comments, separators,
 *  continuation lines, escapes; the last of repeated keys wins), as MM2 reads the file. */
function propertiesOf(text: string): ReadonlyMap<string, string> {
  return new Map(Object.entries(parse(text)).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

function carry(ledger: Ledger, setting: Setting): void {
  // MM2 would resolve `${provider:path:key}` through config.providers; taking it literally would
  // register a wrong address or password. The value is not quoted: it may be a secret.
  if (ledger.providers && /\$\{[^}]*\}/.test(setting.value)) {
    throw invalid(`${setting.key} uses a config provider placeholder (\${…}), which kmirror does not resolve: write the value itself`);
  }
  ledger.carried.add(setting.key);
}

/** The first reason given for a key stands (a top-level key may be seen by several clusters). */
function note(ledger: Ledger, setting: Setting, reason: string): void {
  if (ledger.notes.has(setting.key)) return;
  ledger.notes.set(setting.key, { key: setting.key, value: SECRET.test(setting.key) ? REDACTED : setting.value, reason });
}

/** A non-secret value, trimmed (Kafka's ConfigDef trims too). A properties file has no end-of-line
 *  comments: MM2 would read `A, B   # comment` as part of the value (an alias or regex that never
 *  matches, a `true` that is false), so that is refused rather than guessed. */
function plain(setting: Setting): string {
  const value = setting.value.trim();
  if (/\s#/.test(value)) {
    throw invalid(`${setting.key} = ${JSON.stringify(value)}: a .properties file has no end-of-line comments, so MirrorMaker 2 reads the '#…' as part of the value; move the comment to its own line`);
  }
  return value;
}

/** MM2's list type: comma-separated, spaces around commas allowed; empty entries dropped. */
function listOf(setting: Setting): string[] {
  return plain(setting)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function booleanOf(setting: Setting): boolean {
  const value = plain(setting).toLowerCase();
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalid(`${setting.key} = ${JSON.stringify(setting.value.trim())}: expected true or false`);
}

function clustersOf(ledger: Ledger): string[] {
  const value = ledger.props.get('clusters');
  if (value === undefined) throw invalid('no "clusters" setting: MirrorMaker 2 needs clusters = <alias>, <alias>… and <alias>.bootstrap.servers for each');
  const aliases = [...new Set(listOf({ key: 'clusters', value }))];
  if (aliases.length === 0) throw invalid('"clusters" is empty: list the cluster aliases, e.g. clusters = A, B');
  aliases.forEach(assertClusterName);
  ledger.carried.add('clusters');
  return aliases;
}

/** Where MM2 reads a key from. Aliases may contain dots, so the longest alias that fits wins. */
function scopeOf(key: string, aliases: readonly string[]): Scope {
  const arrow = key.indexOf('->');
  if (arrow >= 0) {
    // Aliases cannot contain '>', so the first '->' separates source from destination.
    const source = key.slice(0, arrow);
    const after = key.slice(arrow + 2);
    const destination = longestPrefix(after, aliases);
    if (!aliases.includes(source) || destination === undefined) {
      throw invalid(`"${key}" names a flow between clusters that are not both in clusters = ${aliases.join(', ')} (expected <source>-><target>.<setting>)`);
    }
    return { kind: 'flow', flow: { source, destination }, name: after.slice(destination.length + 1) };
  }
  // Top-level names MM2 reads per flow or per cluster, even if an alias happens to prefix them.
  if (key === 'clusters' || FLOW_SETTINGS.has(key) || SECURITY_SETTINGS.has(key)) return { kind: 'top', name: key };
  const alias = longestPrefix(key, aliases);
  return alias === undefined ? { kind: 'top', name: key } : { kind: 'cluster', alias, name: key.slice(alias.length + 1) };
}

function longestPrefix(key: string, aliases: readonly string[]): string | undefined {
  return aliases.filter((a) => key.startsWith(`${a}.`)).sort((a, b) => b.length - a.length)[0];
}

const flowName = (flow: Flow): string => `${flow.source}->${flow.destination}`;

/** Flows are off unless `A->B.enabled = true`; every flow key must name listed aliases (a typo
 *  like `A->b.topics` would otherwise be dropped silently, as MM2 does). */
function enabledFlows(ledger: Ledger, aliases: readonly string[]): Flow[] {
  const enabled = new Set<string>();
  for (const [key, value] of ledger.props) {
    const scope = scopeOf(key, aliases);
    if (scope.kind !== 'flow' || scope.name !== 'enabled') continue;
    ledger.carried.add(key);
    if (!booleanOf({ key, value })) continue;
    if (scope.flow.source === scope.flow.destination) throw invalid(`${key}: a flow needs two different clusters`);
    enabled.add(flowName(scope.flow));
  }
  // MM2's order: every source in the order of `clusters`, then every destination.
  const flows = aliases.flatMap((source) => aliases.map((destination) => ({ source, destination }))).filter((f) => enabled.has(flowName(f)));
  if (flows.length === 0) {
    throw invalid('no replication flow is enabled: MirrorMaker 2 flows are off by default, enable one with <source>-><target>.enabled = true');
  }
  return flows;
}

// ---- clusters ----

/** `<alias>.<name>`, else the top-level `<name>` (MM2 gives top-level client settings to every cluster). */
function clusterSetting(ledger: Ledger, alias: string, name: string): Setting | undefined {
  for (const key of [`${alias}.${name}`, name]) {
    const value = ledger.props.get(key);
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

function planCluster(ledger: Ledger, alias: string): Mm2ClusterPlan {
  const bootstrapKey = `${alias}.bootstrap.servers`;
  const bootstrapValue = ledger.props.get(bootstrapKey);
  if (bootstrapValue === undefined) {
    const topLevel = ledger.props.has('bootstrap.servers') ? ' (kmirror does not give the top-level bootstrap.servers to a cluster)' : '';
    throw invalid(`cluster ${alias} is used by an enabled flow but ${bootstrapKey} is not set${topLevel}`);
  }
  const bootstrap = bootstrapOf({ key: bootstrapKey, value: bootstrapValue });
  carry(ledger, { key: bootstrapKey, value: bootstrapValue });
  const securityProtocol = protocolOf(ledger, alias);
  const sasl = saslOf(ledger, alias, securityProtocol);
  const trust = truststoreOf(ledger, alias, securityProtocol);
  return {
    alias,
    connection: { bootstrap, securityProtocol, ...(sasl ? { sasl } : {}), ...(trust.sslCa !== undefined ? { sslCa: trust.sslCa } : {}) },
    ...(trust.sslCaFile !== undefined ? { sslCaFile: trust.sslCaFile } : {}),
  };
}

function bootstrapOf(setting: Setting): string[] {
  try {
    return parseBootstrap(plain(setting), setting.key);
  } catch (err) {
    // parseBootstrap speaks of kmirror's own config; here the MM2 file is the bad argument.
    if (isKmirrorError(err, 'INVALID_CONFIG')) throw invalid(err.message);
    throw err;
  }
}

function protocolOf(ledger: Ledger, alias: string): SecurityProtocol {
  const setting = clusterSetting(ledger, alias, 'security.protocol');
  if (setting === undefined) return 'PLAINTEXT';
  const name = plain(setting).toUpperCase();
  const protocol = PROTOCOLS.find((p) => p === name);
  if (protocol === undefined) throw invalid(`${setting.key} = ${JSON.stringify(name)}: expected one of ${PROTOCOLS.join(', ')}`);
  carry(ledger, setting);
  return protocol;
}

function saslOf(ledger: Ledger, alias: string, protocol: SecurityProtocol): ClusterConnection['sasl'] {
  const mechanismSetting = clusterSetting(ledger, alias, 'sasl.mechanism');
  const jaas = clusterSetting(ledger, alias, 'sasl.jaas.config');
  if (protocol !== 'SASL_PLAINTEXT' && protocol !== 'SASL_SSL') {
    for (const s of [mechanismSetting, jaas]) if (s) note(ledger, s, `cluster ${alias} uses security.protocol ${protocol}, which has no SASL, so MirrorMaker 2 does not use this either.`);
    return undefined;
  }
  // Kafka's default mechanism is GSSAPI, so an absent one is not PLAIN.
  if (mechanismSetting === undefined) throw invalid(`cluster ${alias} uses ${protocol} but ${alias}.sasl.mechanism is not set (MirrorMaker 2 would use GSSAPI): kmirror supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512`);
  const name = plain(mechanismSetting).toUpperCase();
  const mechanism = MECHANISMS.get(name);
  if (mechanism === undefined) throw invalid(`${mechanismSetting.key} = ${JSON.stringify(name)}: kmirror supports SASL PLAIN and SCRAM (SCRAM-SHA-256, SCRAM-SHA-512) only`);
  if (jaas === undefined) throw invalid(`cluster ${alias} uses ${protocol} but ${alias}.sasl.jaas.config is not set: kmirror needs its username="…" and password="…"`);
  const credentials = credentialsOf(jaas);
  carry(ledger, mechanismSetting);
  carry(ledger, jaas);
  return { mechanism, ...credentials };
}

/** username and password from a PlainLoginModule or ScramLoginModule entry. Errors name the key,
 *  never the value: it holds the password. */
function credentialsOf(jaas: Setting): { username: string; password: string } {
  const entry = parseJaas(jaas.value);
  if (entry === undefined) throw invalid(`${jaas.key} is not a login module entry kmirror can read (expected <LoginModule> required username="…" password="…";)`);
  const simpleName = entry.module.slice(entry.module.lastIndexOf('.') + 1);
  if (simpleName !== 'PlainLoginModule' && simpleName !== 'ScramLoginModule') {
    throw invalid(`${jaas.key} uses login module ${entry.module}: kmirror supports PlainLoginModule and ScramLoginModule (username and password) only`);
  }
  const username = entry.options.get('username');
  const password = entry.options.get('password');
  if (!username || !password) throw invalid(`${jaas.key} has no username="…" and password="…": kmirror needs both for SASL`);
  return { username, password };
}

const JAAS_HEAD = /\s*([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s+(?:required|requisite|sufficient|optional)(?=\s|;|$)/iy;
const JAAS_OPTION = /\s*([\w.$-]+)\s*=\s*(?:"((?:[^"\\]|\\[\s\S])*)"|'((?:[^'\\]|\\[\s\S])*)'|([^\s"';=]+))/y;

/** One JAAS entry, `<module> <flag> name=value …;` (Kafka's JaasConfig: values quoted with " or ',
 *  or bare words; a backslash escapes the next character inside quotes). */
function parseJaas(text: string): { module: string; options: Map<string, string> } | undefined {
  JAAS_HEAD.lastIndex = 0;
  const head = JAAS_HEAD.exec(text);
  if (head === null) return undefined;
  const options = new Map<string, string>();
  let at = head[0].length;
  for (;;) {
    JAAS_OPTION.lastIndex = at;
    const m = JAAS_OPTION.exec(text);
    if (m === null) break;
    options.set(m[1]!, m[2] !== undefined ? unescapeJaas(m[2]) : m[3] !== undefined ? unescapeJaas(m[3]) : m[4]!);
    at = JAAS_OPTION.lastIndex;
  }
  return /^\s*;?\s*$/.test(text.slice(at)) ? { module: head[1]!, options } : undefined;
}

function unescapeJaas(quoted: string): string {
  const named: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };
  return quoted.replace(/\\([\s\S])/g, (_, c: string) => named[c] ?? c);
}

function truststoreOf(ledger: Ledger, alias: string, protocol: SecurityProtocol): { sslCaFile?: string; sslCa?: string } {
  const type = clusterSetting(ledger, alias, 'ssl.truststore.type');
  const location = clusterSetting(ledger, alias, 'ssl.truststore.location');
  const certificates = clusterSetting(ledger, alias, 'ssl.truststore.certificates');
  const present = [type, location, certificates].filter((s): s is Setting => s !== undefined);
  if (protocol !== 'SSL' && protocol !== 'SASL_SSL') {
    for (const s of present) note(ledger, s, `cluster ${alias} uses security.protocol ${protocol}, which has no TLS, so MirrorMaker 2 does not use this either.`);
    return {};
  }
  const typeName = type === undefined ? 'JKS' : plain(type).toUpperCase();
  if (typeName === 'PEM') {
    if (location !== undefined && certificates !== undefined) throw invalid(`cluster ${alias} sets both ${location.key} and ${certificates.key}: give one (Kafka refuses both too)`);
    present.forEach((s) => carry(ledger, s));
    if (location !== undefined) return { sslCaFile: location.value.trim() };
    if (certificates !== undefined) return { sslCa: certificates.value.trim() };
    return {};
  }
  // No truststore file: MM2 trusts the JVM's CAs as kmirror trusts the system's, nothing to carry.
  if (location === undefined && certificates === undefined) {
    present.forEach((s) => carry(ledger, s));
    return {};
  }
  for (const s of present) note(ledger, s, `cluster ${alias}'s truststore is ${typeName}, and ${TRUSTSTORE}`);
  return {};
}

// ---- mirrors ----

/** `A->B.<name>`, else the top-level `<name>`. */
function flowSetting(ledger: Ledger, flow: Flow, name: string): Setting | undefined {
  for (const key of [`${flowName(flow)}.${name}`, name]) {
    const value = ledger.props.get(key);
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

/** MM2 merges the flow's settings over the top-level ones, then lets `*.exclude` win over its
 *  legacy `*.blacklist` (translateDeprecatedConfigs), so the new name wins at either level. */
function excludeSetting(ledger: Ledger, flow: Flow, name: 'topics.exclude' | 'groups.exclude', legacy: string): Setting | undefined {
  return flowSetting(ledger, flow, name) ?? flowSetting(ledger, flow, legacy);
}

/** Notes that several flows may share (one top-level key): keyed by key, listing the flows. */
interface SharedNote {
  readonly setting: Setting;
  readonly flows: Flow[];
  readonly reason: (flows: readonly Flow[]) => string;
}

function planMirrors(ledger: Ledger, flows: readonly Flow[]): Mm2MirrorPlan[] {
  const shared = new Map<string, SharedNote>();
  const share = (setting: Setting, flow: Flow, reason: SharedNote['reason']): void => {
    const existing = shared.get(setting.key);
    if (existing) existing.flows.push(flow);
    else shared.set(setting.key, { setting, flows: [flow], reason });
  };
  const mirrors = flows.map((flow) => planMirror(ledger, flow, share));
  for (const { setting, flows: sharing, reason } of shared.values()) note(ledger, setting, reason(sharing));
  return mirrors;
}

function planMirror(ledger: Ledger, flow: Flow, share: (setting: Setting, flow: Flow, reason: SharedNote['reason']) => void): Mm2MirrorPlan {
  const name = `${flow.source}-to-${flow.destination}`;
  assertMirrorName(name);
  const patterns = (name: keyof typeof MM2_DEFAULTS, setting: Setting | undefined): string[] => {
    if (setting === undefined) return listOf({ key: `${name} (MirrorMaker 2's default)`, value: MM2_DEFAULTS[name] });
    carry(ledger, setting);
    const list = listOf(setting);
    list.forEach((p) => assertRegex(setting, p));
    return list;
  };
  const include = patterns('topics', flowSetting(ledger, flow, 'topics'));
  const exclude = patterns('topics.exclude', excludeSetting(ledger, flow, 'topics.exclude', 'topics.blacklist'));
  const groupInclude = patterns('groups', flowSetting(ledger, flow, 'groups'));
  const groupExclude = patterns('groups.exclude', excludeSetting(ledger, flow, 'groups.exclude', 'groups.blacklist'));
  const syncGroups = syncGroupsOf(ledger, flow, share);
  replicationPolicyOf(ledger, flow, share);
  // MirrorMaker 2 syncs every principal's READ grants (ALL as READ) by default; kmirror syncs a
  // selected principal's topic ACLs whatever their operation — a write grant stays denied until
  // failover — so every principal is selected when the flow synced ACLs.
  const aclsSetting = flowSetting(ledger, flow, 'sync.topic.acls.enabled');
  if (aclsSetting !== undefined) carry(ledger, aclsSetting);
  const syncAcls = aclsSetting === undefined || booleanOf(aclsSetting);
  return { name, source: flow.source, destination: flow.destination, include, exclude, groups: { include: syncGroups ? groupInclude : [], exclude: groupExclude }, acls: { include: syncAcls ? ['.*'] : [] } };
}

/** kmirror compiles patterns as JavaScript regexes (whole-name match, like MM2). A Java pattern
 *  that does not compile is refused; so are Java escapes that JavaScript would silently read as
 *  plain letters (\Q…\E, \p{…}, \A, \Z, \z, \h, \G), which would select other topics. */
function assertRegex(setting: Setting, pattern: string): void {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '\\') continue;
    const next = pattern[i + 1] ?? '';
    if ('QEpPAZzhHG'.includes(next)) {
      throw invalid(`${setting.key}: ${JSON.stringify(pattern)} uses the Java-only regex escape \\${next}; kmirror uses JavaScript regexes: rewrite it without`);
    }
    i++;
  }
  try {
    new RegExp(pattern);
  } catch (err) {
    throw invalid(`${setting.key}: ${JSON.stringify(pattern)} is not a regular expression kmirror can use (JavaScript syntax): ${(err as Error).message}`);
  }
}

function syncGroupsOf(ledger: Ledger, flow: Flow, share: (setting: Setting, flow: Flow, reason: SharedNote['reason']) => void): boolean {
  const setting = flowSetting(ledger, flow, 'sync.group.offsets.enabled');
  if (setting !== undefined && booleanOf(setting)) {
    carry(ledger, setting);
    return true;
  }
  const key = setting?.key ?? 'sync.group.offsets.enabled';
  share(setting ?? { key, value: MM2_DEFAULTS['sync.group.offsets.enabled'] }, flow, (flows) => {
    const names = flows.map(flowName).join(', ');
    return `MirrorMaker 2 synced no consumer group offsets for ${names}, so the plan syncs none either; kmirror syncs a group only while it has no active members on the destination, clamped to what was mirrored, so turning it on is safe: set ${key} = true before importing.`;
  });
  return false;
}

function replicationPolicyOf(ledger: Ledger, flow: Flow, share: (setting: Setting, flow: Flow, reason: SharedNote['reason']) => void): void {
  const setting = flowSetting(ledger, flow, 'replication.policy.class');
  const policy = setting === undefined ? DEFAULT_POLICY : plain(setting);
  if (policy === IDENTITY_POLICY) {
    if (setting) carry(ledger, setting);
    return;
  }
  const written = setting ?? { key: 'replication.policy.class', value: DEFAULT_POLICY };
  if (policy !== DEFAULT_POLICY) {
    share(written, flow, () => "custom replication policies are not supported: kmirror keeps topic names (a mirror topic has its source topic's name), so check which names your consumers and producers expect.");
    return;
  }
  share(written, flow, (flows) => {
    const renamed = flows.map((f) => `${f.source}${separatorOf(ledger, f)}<topic> on ${f.destination}`).join(', ');
    return `under MirrorMaker 2 the topics were renamed <source alias>.<topic> on the destination (${renamed}); kmirror keeps topic names and offsets (a mirror topic is the same topic), so consumers move to the original names after the switch, and the old <source alias>.<topic> copies on the destination can be deleted once nobody reads them.`;
  });
}

/** DefaultReplicationPolicy's separator, for naming the renamed topics. */
function separatorOf(ledger: Ledger, flow: Flow): string {
  const setting = flowSetting(ledger, flow, 'replication.policy.separator');
  return setting === undefined ? '.' : setting.value.trim() || '.';
}

// ---- the rest ----

/** Why a key the plan did not take is not carried, or undefined when it needs no mention. */
function leftoverReason(scope: Scope, flows: readonly Flow[], used: readonly string[]): string | undefined {
  const rule = RULES.find(([pattern]) => pattern.test(scope.name))?.[1];
  switch (scope.kind) {
    case 'flow':
      // A disabled flow's settings do nothing under MM2 either.
      if (!flows.some((f) => flowName(f) === flowName(scope.flow))) return undefined;
      return rule ?? flowSettingReason(scope.name) ?? UNKNOWN;
    case 'cluster':
      if (!used.includes(scope.alias)) return undefined;
      return rule ?? `a client or Connect worker setting of cluster ${scope.alias}: ${CLIENTS}`;
    case 'top':
      if (SECURITY_SETTINGS.has(scope.name)) return `every cluster kmirror imports sets its own ${scope.name}, so this default is not used.`;
      if (FLOW_SETTINGS.has(scope.name)) return flowSettingReason(scope.name) ?? `every enabled flow sets its own <source>-><target>.${scope.name}, so this default is not used.`;
      if (scope.name === 'bootstrap.servers') return "kmirror takes each cluster's address from <alias>.bootstrap.servers only.";
      if (scope.name.endsWith('.bootstrap.servers')) return `${scope.name.slice(0, -'.bootstrap.servers'.length)} is not in clusters, so MirrorMaker 2 does not use it either: add the alias to clusters if it should be mirrored.`;
      return rule ?? UNKNOWN;
  }
}

function flowSettingReason(name: string): string | undefined {
  const replacement = LEGACY.get(name);
  if (replacement !== undefined) return `MirrorMaker 2 ignores the legacy ${name} where ${replacement} is set, so no enabled flow uses it.`;
  return undefined;
}
