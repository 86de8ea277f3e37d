// Moving from MirrorMaker 2: the configs of Apache Kafka's own documentation, retyped, turned into
// kmirror plans — the clusters, one mirror per enabled flow with MM2's filters and defaults, what is
// not carried over and why — and every config kmirror refuses, without a password in sight.
import { describe, expect, it } from 'vitest';
import { isKmirrorError, type KmirrorError } from '../../domain/errors.ts';
import { planMm2Import, type Mm2ImportPlan } from '../../domain/mm2-config.ts';

const PASSWORD = 'alice-Secret-7f3#';
const TOPICS_EXCLUDE_DEFAULT = ['.*[\\-\\.]internal', '.*\\.replica', '__.*'];
const GROUPS_EXCLUDE_DEFAULT = ['console-consumer-.*', 'connect-.*', '__.*'];
const IDENTITY = 'org.apache.kafka.connect.mirror.IdentityReplicationPolicy';
const DEFAULT_POLICY = 'org.apache.kafka.connect.mirror.DefaultReplicationPolicy';

// Apache Kafka's config/connect-mirror-maker.properties, as shipped (comments included).
const KAFKA_SAMPLE = `# Licensed to the Apache Software Foundation (ASF) under A or more
# contributor license agreements.  See the NOTICE file distributed with
# this work for additional information regarding copyright ownership.
# The ASF licenses this file to You under the Apache License, Version 2.0
# (the "License"); you may not use this file except in compliance with
# the License.  You may obtain a copy of the License at
#
#    http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# see org.apache.kafka.clients.consumer.ConsumerConfig for more details

# Sample MirrorMaker 2.0 top-level configuration file
# Run with ./bin/connect-mirror-maker.sh connect-mirror-maker.properties

# specify any number of cluster aliases
clusters = A, B

# connection information for each cluster
# This is a comma separated host:port pairs for each cluster
# for e.g. "A_host1:9092, A_host2:9092, A_host3:9092"
A.bootstrap.servers = A_host1:9092, A_host2:9092, A_host3:9092
B.bootstrap.servers = B_host1:9092, B_host2:9092, B_host3:9092

# enable and configure individual replication flows
A->B.enabled = true

# regex which defines which topics gets replicated. For eg "foo-.*"
A->B.topics = .*

B->A.enabled = true
B->A.topics = .*

# Setting replication factor of newly created remote topics
replication.factor=1

############################# Internal Topic Settings  #############################
# The replication factor for mm2 internal topics "heartbeats", "B.checkpoints.internal" and
# "mm2-offset-syncs.B.internal"
# For anything other than development testing, a value greater than 1 is recommended to ensure availability such as 3.
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1

# The replication factor for connect internal topics "mm2-configs.B.internal", "mm2-offsets.B.internal" and
# "mm2-status.B.internal"
# For anything other than development testing, a value greater than 1 is recommended to ensure availability such as 3.
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1

# customize as needed
# replication.policy.separator = _
# sync.topic.acls.enabled = false
# emit.heartbeats.interval.seconds = 5
`;

// The Kafka operations docs, section "Geo-Replication (Cross-Cluster Data Mirroring)": the two
// clusters every example there uses. The examples below add their settings to this.
const GEO_CLUSTERS = `# Basic settings
clusters = us-west, us-east
us-west.bootstrap.servers = broker3-west:9092
us-east.bootstrap.servers = broker5-east:9092
`;

// Geo-replication docs: the basic flow, replicating every topic and group from us-west to us-east.
const GEO_FLOW = `${GEO_CLUSTERS}
# Define replication flows
us-west->us-east.enabled = true
us-west->us-east.topics = .*
us-west->us-east.groups = .*
`;

function plan(text: string): Mm2ImportPlan {
  return planMm2Import(text);
}

function notCarried(p: Mm2ImportPlan, key: string) {
  return p.notCarried.find((n) => n.key === key);
}

/** The plan as JSON with each cluster's SASL password blanked: where the password may appear. */
function outsideSaslPasswords(p: Mm2ImportPlan): string {
  return JSON.stringify({
    ...p,
    clusters: p.clusters.map((c) => ({ ...c, connection: { ...c.connection, sasl: c.connection.sasl && { ...c.connection.sasl, password: '<sealed>' } } })),
  });
}

function refusal(text: string): KmirrorError {
  try {
    planMm2Import(text);
  } catch (err) {
    if (isKmirrorError(err)) return err;
    throw err;
  }
  throw new Error('expected planMm2Import to refuse the config');
}

/** An INVALID_ARGUMENT whose message matches, and never shows the password. */
function expectInvalid(text: string, message: RegExp): KmirrorError {
  const err = refusal(text);
  expect(isKmirrorError(err, 'INVALID_ARGUMENT'), `${err.code}: ${err.message}`).toBe(true);
  expect(err.message).toMatch(message);
  expect(err.message).not.toContain(PASSWORD);
  expect(JSON.stringify(err.details)).not.toContain(PASSWORD);
  return err;
}

describe("planMm2Import: Kafka's config/connect-mirror-maker.properties", () => {
  const p = plan(KAFKA_SAMPLE);

  it('registers both clusters with their three brokers each', () => {
    expect(p.clusters).toEqual([
      { alias: 'A', connection: { bootstrap: ['A_host1:9092', 'A_host2:9092', 'A_host3:9092'], securityProtocol: 'PLAINTEXT' } },
      { alias: 'B', connection: { bootstrap: ['B_host1:9092', 'B_host2:9092', 'B_host3:9092'], securityProtocol: 'PLAINTEXT' } },
    ]);
  });

  it("plans mirror A-to-B with MirrorMaker 2's default filters, syncing no group (sync.group.offsets.enabled defaults to false); B->A is not imported, with the reason", () => {
    const mirror = (source: string, destination: string) => ({
      name: `${source}-to-${destination}`,
      source,
      destination,
      include: ['.*'],
      exclude: TOPICS_EXCLUDE_DEFAULT,
      groups: { include: [], exclude: GROUPS_EXCLUDE_DEFAULT },
      acls: { include: ['.*'] }, // sync.topic.acls.enabled defaults to true
    });
    expect(p.mirrors).toEqual([mirror('A', 'B')]);
    expect(notCarried(p, 'B->A.enabled')).toEqual({ key: 'B->A.enabled', value: 'true', reason: expect.stringMatching(/not imported: kmirror keeps topic names and offsets, and A already sends its topics to B.*back into their own source.*one way at a time.*failback/) });
  });

  it('lists the replication factors, the default replication policy and the group sync, sorted by key; the commented-out lines are not settings', () => {
    expect(p.notCarried.map((n) => n.key)).toEqual([
      'B->A.enabled',
      'checkpoints.topic.replication.factor',
      'config.storage.replication.factor',
      'heartbeats.topic.replication.factor',
      'offset-syncs.topic.replication.factor',
      'offset.storage.replication.factor',
      'replication.factor',
      'replication.policy.class',
      'status.storage.replication.factor',
      'sync.group.offsets.enabled',
    ]);
    expect(notCarried(p, 'replication.factor')).toEqual({ key: 'replication.factor', value: '1', reason: expect.stringMatching(/source topic's partition count.*internal topics do not exist/) });
    expect(notCarried(p, 'heartbeats.topic.replication.factor')?.reason).toMatch(/offsets equal.*no offset-sync, checkpoint or heartbeat topics/);
    expect(notCarried(p, 'config.storage.replication.factor')?.reason).toMatch(/not built on Kafka Connect/);
    expect(notCarried(p, 'sync.group.offsets.enabled')).toEqual({
      key: 'sync.group.offsets.enabled',
      value: 'false',
      reason: expect.stringMatching(/A->B.*no active members on the destination, clamped to what was mirrored.*safe/),
    });
  });

  it('tells the operator that consumers move from the renamed A.<topic> copies to the original names (of the imported flow only)', () => {
    const policy = notCarried(p, 'replication.policy.class')!;
    expect(policy.value).toBe(DEFAULT_POLICY);
    expect(policy.reason).toContain('A.<topic> on B');
    expect(policy.reason).not.toContain('B.<topic> on A');
    expect(policy.reason).toMatch(/keeps topic names and offsets.*original names after the switch.*can be deleted once nobody reads them/);
  });
});

describe('planMm2Import: the geo-replication examples of the Kafka operations docs', () => {
  it('plans the basic us-west->us-east flow: every topic, and every group once offsets are synced', () => {
    const p = plan(GEO_FLOW);
    expect(p.clusters.map((c) => [c.alias, c.connection.bootstrap])).toEqual([
      ['us-west', ['broker3-west:9092']],
      ['us-east', ['broker5-east:9092']],
    ]);
    expect(p.mirrors).toEqual([
      { name: 'us-west-to-us-east', source: 'us-west', destination: 'us-east', include: ['.*'], exclude: TOPICS_EXCLUDE_DEFAULT, groups: { include: [], exclude: GROUPS_EXCLUDE_DEFAULT }, acls: { include: ['.*'] } },
    ]);
    expect(p.notCarried.map((n) => n.key)).toEqual(['replication.policy.class', 'sync.group.offsets.enabled']);
    expect(notCarried(p, 'replication.policy.class')!.reason).toContain('us-west.<topic> on us-east');

    const synced = plan(`${GEO_FLOW}sync.group.offsets.enabled = true\n`);
    expect(synced.mirrors[0]!.groups).toEqual({ include: ['.*'], exclude: GROUPS_EXCLUDE_DEFAULT });
    expect(synced.notCarried.map((n) => n.key)).toEqual(['replication.policy.class']);

    // ACL sync follows sync.topic.acls.enabled (a flow may turn it off); its interval is the worker's.
    const noAcls = plan(`${GEO_FLOW}us-west->us-east.sync.topic.acls.enabled = false\nsync.topic.acls.interval.seconds = 60\n`);
    expect(noAcls.mirrors[0]!.acls).toEqual({ include: [] });
    expect(notCarried(noAcls, 'sync.topic.acls.interval.seconds')!.reason).toMatch(/KMIRROR_DISCOVERY_INTERVAL_MS/);
    expect(notCarried(noAcls, 'us-west->us-east.sync.topic.acls.enabled')).toBeUndefined();
  });

  it('refuses the "Configuration File Syntax" example as printed: end-of-line comments, then the us.east typo', () => {
    // As printed in the docs: "# …" after a value is no comment in a .properties file.
    const printed = `# Global settings
clusters = us-west, us-east   # defines cluster aliases
us-west.bootstrap.servers = broker3-west:9092
us-east.bootstrap.servers = broker5-east:9092

topics = .*   # all topics to be replicated by default

# Specific replication flow settings (here: flow from us-west to us-east)
us-west->us-east.enabled = true
us-west->us.east.topics = foo.*, bar.*  # override the default above
`;
    expectInvalid(printed, /^MirrorMaker 2 config: clusters = "us-west, us-east {3}# defines cluster aliases": .*no end-of-line comments/);
    const commentsOnTheirOwnLines = printed.replace(/ +# [^\n]*/g, '');
    expectInvalid(commentsOnTheirOwnLines, /"us-west->us\.east\.topics" names a flow between clusters that are not both in clusters = us-west, us-east/);
  });

  it('plans the "Configuration File Syntax" example, typo fixed: the flow overrides the top-level topics', () => {
    const p = plan(`${GEO_CLUSTERS}
topics = .*
# all topics to be replicated by default

# Specific replication flow settings (here: flow from us-west to us-east)
us-west->us-east.enabled = true
us-west->us-east.topics = foo.*, bar.*
# override the default above

# Setting Kafka Connect defaults for MirrorMaker
tasks.max = 5
`);
    expect(p.mirrors[0]).toMatchObject({ include: ['foo.*', 'bar.*'], exclude: TOPICS_EXCLUDE_DEFAULT });
    expect(notCarried(p, 'topics')).toEqual({ key: 'topics', value: '.*', reason: expect.stringMatching(/every enabled flow sets its own <source>-><target>\.topics/) });
    expect(notCarried(p, 'tasks.max')).toEqual({ key: 'tasks.max', value: '5', reason: expect.stringMatching(/KMIRROR_MIN_COPIES and KMIRROR_PARTITIONS_PER_COPIER/) });
  });

  it('lists the per-cluster Connect and client settings of the docs as not carried', () => {
    const p = plan(`${GEO_FLOW}
# us-west custom settings
us-west.offset.storage.topic = my-mirrormaker-offsets

# us-west cluster (from which to consume)
us-west.consumer.isolation.level = read_committed
us-west.admin.bootstrap.servers = broker57-primary:9092

# us-east cluster (to which to produce)
us-east.producer.compression.type = gzip
us-east.producer.buffer.memory = 32768
us-east.admin.bootstrap.servers = broker8-secondary:9092
`);
    expect(p.clusters.map((c) => c.connection.bootstrap)).toEqual([['broker3-west:9092'], ['broker5-east:9092']]);
    expect(notCarried(p, 'us-west.offset.storage.topic')?.reason).toMatch(/not built on Kafka Connect/);
    for (const key of ['us-west.consumer.isolation.level', 'us-west.admin.bootstrap.servers', 'us-east.producer.compression.type', 'us-east.producer.buffer.memory', 'us-east.admin.bootstrap.servers']) {
      expect(notCarried(p, key)?.reason, key).toMatch(/tunes its own Kafka clients/);
    }
    expect(notCarried(p, 'us-east.producer.buffer.memory')?.value).toBe('32768');
  });

  it('takes the "Configuring Replication Flows" example: top-level defaults, flow overrides, a docs-era emit setting', () => {
    const p = plan(`${GEO_CLUSTERS}
# Custom top-level defaults that apply to all replication flows
topics = .*
groups = consumer-group1, consumer-group2

# Don't forget to enable a flow!
us-west->us-east.enabled = true

# Custom settings for specific replication flows
us-west->us-east.topics = foo.*
us-west->us-east.groups = bar.*
us-west->us-east.emit.heartbeats = false
us-west->us-east.sync.group.offsets.enabled = true
`);
    expect(p.mirrors[0]).toMatchObject({ include: ['foo.*'], groups: { include: ['bar.*'], exclude: GROUPS_EXCLUDE_DEFAULT } });
    expect(notCarried(p, 'us-west->us-east.emit.heartbeats')?.reason).toMatch(/no offset-sync, checkpoint or heartbeat topics/);
    expect(notCarried(p, 'groups')?.reason).toMatch(/every enabled flow sets its own/);
    expect(notCarried(p, 'us-west->us-east.sync.group.offsets.enabled')).toBeUndefined();
  });

  it('reads topics.exclude and the legacy topics.blacklist / groups.blacklist; .exclude wins when both are set', () => {
    // A properties file unescapes backslashes: written \\. the regex reads \. (a dot).
    const p = plan(String.raw`${GEO_FLOW}
topics.exclude = .*\\.internal, , __.*
groups.blacklist = test-.*
`);
    expect(p.mirrors[0]!.exclude).toEqual(['.*\\.internal', '__.*']);
    expect(p.mirrors[0]!.groups.exclude).toEqual(['test-.*']);
    expect(p.notCarried.map((n) => n.key)).not.toContain('groups.blacklist');

    const both = plan(`${GEO_FLOW}topics.exclude = a.*\nus-west->us-east.topics.blacklist = b.*\n`);
    expect(both.mirrors[0]!.exclude).toEqual(['a.*']);
    expect(notCarried(both, 'us-west->us-east.topics.blacklist')?.reason).toMatch(/ignores the legacy topics\.blacklist where topics\.exclude is set/);
  });

  it('says nothing about the replication policy under IdentityReplicationPolicy, and names the renamed topics under the default one', () => {
    const identity = plan(`${GEO_FLOW}replication.policy.class=${IDENTITY}\n`);
    expect(identity.notCarried.map((n) => n.key)).toEqual(['sync.group.offsets.enabled']);

    // Geo-replication docs, "Custom Naming of Replicated Topics in Target Clusters".
    const separator = plan(`${GEO_FLOW}
# Defining a custom separator
us-west->us-east.replication.policy.separator = _
`);
    expect(notCarried(separator, 'replication.policy.class')?.reason).toContain('us-west_<topic> on us-east');
    expect(notCarried(separator, 'us-west->us-east.replication.policy.separator')?.reason).toMatch(/keeps topic names/);

    const custom = plan(`${GEO_FLOW}us-west->us-east.replication.policy.class = com.example.PrefixPolicy\n`);
    expect(notCarried(custom, 'us-west->us-east.replication.policy.class')).toEqual({
      key: 'us-west->us-east.replication.policy.class',
      value: 'com.example.PrefixPolicy',
      reason: expect.stringMatching(/custom replication policies are not supported/),
    });
  });

  it('lets a flow turn group offset sync off against a top-level true, and says so under the flow key', () => {
    const p = plan(`${GEO_FLOW}sync.group.offsets.enabled = true\nus-west->us-east.sync.group.offsets.enabled = false\n`);
    expect(p.mirrors[0]!.groups.include).toEqual([]);
    expect(notCarried(p, 'us-west->us-east.sync.group.offsets.enabled')).toEqual({
      key: 'us-west->us-east.sync.group.offsets.enabled',
      value: 'false',
      reason: expect.stringMatching(/set us-west->us-east\.sync\.group\.offsets\.enabled = true/),
    });
    expect(notCarried(p, 'sync.group.offsets.enabled')?.reason).toMatch(/every enabled flow sets its own/);
  });

  it('carries SASL_SSL with SCRAM-SHA-512 credentials and a PEM truststore; the password is only in connection.sasl', () => {
    const p = plan(`${GEO_FLOW}
us-east.security.protocol = SASL_SSL
us-east.sasl.mechanism = SCRAM-SHA-512
us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" \\
    password="${PASSWORD}";
us-east.ssl.truststore.type = PEM
us-east.ssl.truststore.location = /etc/kafka/secrets/us-east-ca.pem
`);
    expect(p.clusters[1]).toEqual({
      alias: 'us-east',
      connection: { bootstrap: ['broker5-east:9092'], securityProtocol: 'SASL_SSL', sasl: { mechanism: 'scram-sha-512', username: 'alice', password: PASSWORD } },
      sslCaFile: '/etc/kafka/secrets/us-east-ca.pem',
    });
    expect(p.clusters[0]!.connection).toEqual({ bootstrap: ['broker3-west:9092'], securityProtocol: 'PLAINTEXT' });
    expect(p.notCarried.map((n) => n.key)).toEqual(['replication.policy.class', 'sync.group.offsets.enabled']);
    expect(outsideSaslPasswords(p)).not.toContain(PASSWORD);
  });

  it('reads PLAIN and SCRAM-SHA-256 login entries with single quotes, escapes and top-level settings every cluster inherits', () => {
    const p = plan(String.raw`${GEO_FLOW}
security.protocol = sasl_plaintext
sasl.mechanism = PLAIN
sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username='mirror' password='it\\'s';
us-east.sasl.mechanism = SCRAM-SHA-256
us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED username=bob password="a\\"b";
`);
    expect(p.clusters.map((c) => c.connection)).toEqual([
      { bootstrap: ['broker3-west:9092'], securityProtocol: 'SASL_PLAINTEXT', sasl: { mechanism: 'plain', username: 'mirror', password: "it's" } },
      { bootstrap: ['broker5-east:9092'], securityProtocol: 'SASL_PLAINTEXT', sasl: { mechanism: 'scram-sha-256', username: 'bob', password: 'a"b' } },
    ]);
    expect(p.notCarried.map((n) => n.key)).toEqual(['replication.policy.class', 'sync.group.offsets.enabled']);
  });

  it('takes PEM certificates written in the file as the CA, and falls back to the system CAs without a truststore', () => {
    const p = plan(String.raw`${GEO_FLOW}
security.protocol = SSL
us-east.ssl.truststore.type = PEM
us-east.ssl.truststore.certificates = -----BEGIN CERTIFICATE-----\n\
    MIIB \n\
    -----END CERTIFICATE-----
`);
    expect(p.clusters[0]).toEqual({ alias: 'us-west', connection: { bootstrap: ['broker3-west:9092'], securityProtocol: 'SSL' } });
    expect(p.clusters[1]!.connection.sslCa).toBe('-----BEGIN CERTIFICATE-----\nMIIB \n-----END CERTIFICATE-----');
    expect(p.clusters[1]!.sslCaFile).toBeUndefined();
  });

  it('lists the JKS truststore and the keystores of "Securing Replication Flows", secrets redacted', () => {
    const secret = 'my-secret-password';
    const p = plan(`${GEO_FLOW}
us-east.security.protocol=SSL
us-east.ssl.truststore.location=/path/to/truststore.jks
us-east.ssl.truststore.password=${secret}
us-east.ssl.keystore.location=/path/to/keystore.jks
us-east.ssl.keystore.password=${secret}
us-east.ssl.key.password=${secret}
`);
    expect(p.clusters[1]).toEqual({ alias: 'us-east', connection: { bootstrap: ['broker5-east:9092'], securityProtocol: 'SSL' } });
    expect(notCarried(p, 'us-east.ssl.truststore.location')).toEqual({
      key: 'us-east.ssl.truststore.location',
      value: '/path/to/truststore.jks',
      reason: expect.stringMatching(/truststore is JKS.*PEM CA file: convert .*keytool\/openssl.*kmirror cluster add --ssl-ca-file/),
    });
    expect(notCarried(p, 'us-east.ssl.truststore.password')).toMatchObject({ value: '[redacted]', reason: expect.stringMatching(/PEM CA file/) });
    expect(notCarried(p, 'us-east.ssl.keystore.location')).toMatchObject({ value: '/path/to/keystore.jks', reason: expect.stringMatching(/mTLS client certificates are not supported yet/) });
    for (const key of ['us-east.ssl.keystore.password', 'us-east.ssl.key.password']) expect(notCarried(p, key)).toMatchObject({ value: '[redacted]', reason: expect.stringMatching(/mTLS/) });
    expect(JSON.stringify(p)).not.toContain(secret);

    const pkcs12 = plan(`${GEO_FLOW}us-east.security.protocol=SSL\nus-east.ssl.truststore.type=PKCS12\nus-east.ssl.truststore.location=/path/to/truststore.p12\n`);
    expect(pkcs12.clusters[1]!.sslCaFile).toBeUndefined();
    expect(notCarried(pkcs12, 'us-east.ssl.truststore.type')?.reason).toMatch(/truststore is PKCS12/);
    expect(notCarried(pkcs12, 'us-east.ssl.truststore.location')?.reason).toMatch(/truststore is PKCS12/);
  });

  it('lists SASL and TLS settings a cluster\'s protocol does not use, the jaas config redacted', () => {
    const p = plan(`${GEO_FLOW}
us-east.sasl.mechanism = PLAIN
us-east.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="${PASSWORD}";
us-east.ssl.truststore.type = PEM
us-east.ssl.truststore.location = /ca.pem
`);
    expect(p.clusters[1]!.connection).toEqual({ bootstrap: ['broker5-east:9092'], securityProtocol: 'PLAINTEXT' });
    expect(p.clusters[1]!.sslCaFile).toBeUndefined();
    expect(notCarried(p, 'us-east.sasl.jaas.config')).toEqual({ key: 'us-east.sasl.jaas.config', value: '[redacted]', reason: expect.stringMatching(/PLAINTEXT, which has no SASL/) });
    expect(notCarried(p, 'us-east.ssl.truststore.location')?.reason).toMatch(/PLAINTEXT, which has no TLS/);
    expect(JSON.stringify(p)).not.toContain(PASSWORD);
  });

  it('leaves out the keys of disabled flows and unused clusters, and lists the rest with a reason', () => {
    const p = plan(`${GEO_FLOW}
clusters = us-west, us-east, eu-north
eu-north.bootstrap.servers = broker9-north:9092
eu-north.producer.acks = all
us-east->us-west.enabled = false
us-east->us-west.topics = bar.*
us-west->eu-north.tasks.max = 3
refresh.topics.interval.seconds = 60
sync.topic.acls.enabled = true
sync.topic.configs.enabled = true
dedicated.mode.enable.internal.rest = true
bootstrap.servers = somewhere:9092
Us-east.bootstrap.servers = broker6-east:9092
us-west.client.id = mm2
us-west.sasl.login.refresh.window.factor = 0.8
us-west.metadata.max.age.ms = 1000
my.custom.setting = 1
oauth.token = abc
`);
    expect(p.clusters.map((c) => c.alias)).toEqual(['us-west', 'us-east']);
    expect(p.mirrors.map((m) => m.name)).toEqual(['us-west-to-us-east']);
    const reasons = Object.fromEntries(p.notCarried.map((n) => [n.key, n.reason]));
    expect(Object.keys(reasons)).toEqual([
      'Us-east.bootstrap.servers',
      'bootstrap.servers',
      'dedicated.mode.enable.internal.rest',
      'my.custom.setting',
      'oauth.token',
      'refresh.topics.interval.seconds',
      'replication.policy.class',
      'sync.group.offsets.enabled',
      'sync.topic.configs.enabled',
      'us-west.client.id',
      'us-west.metadata.max.age.ms',
      'us-west.sasl.login.refresh.window.factor',
    ]);
    expect(reasons['Us-east.bootstrap.servers']).toMatch(/^Us-east is not in clusters/);
    expect(reasons['refresh.topics.interval.seconds']).toMatch(/KMIRROR_DISCOVERY_INTERVAL_MS/);
    expect(reasons['sync.topic.configs.enabled']).toMatch(/always keeps a mirror topic's configs in step/);
    expect(reasons['my.custom.setting']).toBe('not a MirrorMaker 2 setting kmirror knows: check whether your migration depends on it.');
    expect(reasons['us-west.metadata.max.age.ms']).toMatch(/setting of cluster us-west: kmirror tunes its own Kafka clients/);
    expect(notCarried(p, 'oauth.token')?.value).toBe('[redacted]');
  });

  it('plans the "Multi-Cluster Geo-Replication" example (clusters with a colon separator), bootstraps filled in', () => {
    const aliases = ['west-1', 'west-2', 'east-1', 'east-2', 'north-1', 'north-2'];
    const p = plan(`# Basic settings
clusters: west-1, west-2, east-1, east-2, north-1, north-2
${aliases.map((a) => `${a}.bootstrap.servers = ${a}-broker:9092`).join('\n')}

# Replication flows for Active/Active in West DC
west-1->west-2.enabled = true
west-2->west-1.enabled = true

# Replication flows for Active/Active in East DC
east-1->east-2.enabled = true
east-2->east-1.enabled = true

# Replication flows for Active/Active in North DC
north-1->north-2.enabled = true
north-2->north-1.enabled = true

# Replication flows for XDCR via west-1, east-1, north-1
west-1->east-1.enabled  = true
west-1->north-1.enabled = true
east-1->west-1.enabled  = true
east-1->north-1.enabled = true
north-1->west-1.enabled = true
north-1->east-1.enabled = true
`);
    expect(p.clusters.map((c) => c.alias)).toEqual(aliases);
    // Under kmirror's naming a cluster receives from one source and no flow closes a cycle: the
    // flows of the file that keep that, in file order, form a tree from west-1 (chains are fine).
    expect(p.mirrors.map((m) => m.name)).toEqual(['west-1-to-west-2', 'west-1-to-east-1', 'west-1-to-north-1', 'east-1-to-east-2', 'north-1-to-north-2']);
    expect(notCarried(p, 'west-2->west-1.enabled')?.reason).toMatch(/west-1 already sends its topics to west-2/);
    expect(notCarried(p, 'east-1->north-1.enabled')?.reason).toMatch(/north-1 already receives west-1's topics \(mirror west-1-to-north-1\)/);
    expect(p.notCarried.filter((n) => n.key.includes('->')).map((n) => n.key)).toEqual([
      'east-1->north-1.enabled',
      'east-1->west-1.enabled',
      'east-2->east-1.enabled',
      'north-1->east-1.enabled',
      'north-1->west-1.enabled',
      'north-2->north-1.enabled',
      'west-2->west-1.enabled',
    ]);
    expect(notCarried(p, 'replication.policy.class')?.reason).toContain('west-1.<topic> on west-2, west-1.<topic> on east-1');
  });
});

describe('planMm2Import refuses what it cannot carry faithfully (INVALID_ARGUMENT, naming the key)', () => {
  it('refuses a config without clusters: the "Active/Passive" example of the docs has none', () => {
    expectInvalid(
      `# Unidirectional flow (one-way) from primary to secondary cluster
primary.bootstrap.servers = broker1-primary:9092
secondary.bootstrap.servers = broker2-secondary:9092

primary->secondary.enabled = true
secondary->primary.enabled = false

primary->secondary.topics = foo.*
`,
      /no "clusters" setting/,
    );
    expectInvalid('clusters = , \n', /"clusters" is empty/);
    expectInvalid('', /no "clusters" setting/);
    expectInvalid('clusters = a:b\n', /cluster name "a:b" may contain only/);
  });

  it('refuses a flow naming a cluster not in clusters, even a disabled one', () => {
    expectInvalid(`${GEO_FLOW}us-west->eu-north.enabled = true\n`, /"us-west->eu-north\.enabled" names a flow between clusters that are not both in clusters = us-west, us-east/);
    expectInvalid(`${GEO_FLOW}eu-north->us-east.enabled = false\n`, /"eu-north->us-east\.enabled"/);
    expectInvalid(`${GEO_FLOW}us-west->us-west.enabled = true\n`, /us-west->us-west\.enabled: a flow needs two different clusters/);
  });

  it('refuses a cluster of an enabled flow without bootstrap servers: the "Active/Active" example of the docs misspells Us-east', () => {
    expectInvalid(
      `# Bidirectional flow (two-way) between us-west and us-east clusters
clusters = us-west, us-east
us-west.bootstrap.servers = broker1-west:9092,broker2-west:9092
Us-east.bootstrap.servers = broker3-east:9092,broker4-east:9092

us-west->us-east.enabled = true
us-east->us-west.enabled = true
`,
      /cluster us-east is used by an enabled flow but us-east\.bootstrap\.servers is not set/,
    );
    expectInvalid(GEO_FLOW.replace('broker5-east:9092', 'broker5-east'), /us-east\.bootstrap\.servers: 'broker5-east' is not host:port/);
  });

  it('refuses a config with no enabled flow', () => {
    expectInvalid(GEO_CLUSTERS, /no replication flow is enabled: .*<source>-><target>\.enabled = true/);
    expectInvalid(`${GEO_CLUSTERS}us-west->us-east.enabled = false\nus-west->us-east.topics = .*\n`, /no replication flow is enabled/);
    expectInvalid(`${GEO_CLUSTERS}us-west->us-east.enabled = yes\n`, /us-west->us-east\.enabled = "yes": expected true or false/);
  });

  it('refuses SASL without both credentials, without a mechanism, or with a login module other than PLAIN/SCRAM', () => {
    const sasl = `${GEO_FLOW}us-east.security.protocol = SASL_SSL\nus-east.sasl.mechanism = SCRAM-SHA-512\n`;
    expectInvalid(sasl, /cluster us-east uses SASL_SSL but us-east\.sasl\.jaas\.config is not set/);
    expectInvalid(`${sasl}us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="alice";\n`, /us-east\.sasl\.jaas\.config has no username="…" and password="…"/);
    expectInvalid(`${sasl}us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required password="${PASSWORD}";\n`, /has no username/);
    expectInvalid(`${sasl}us-east.sasl.jaas.config = username="alice" password="${PASSWORD}"\n`, /us-east\.sasl\.jaas\.config is not a login module entry kmirror can read/);
    expectInvalid(`${sasl}us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="${PASSWORD}" junk\n`, /not a login module entry/);
    expectInvalid(
      `${sasl}us-east.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientSecret="${PASSWORD}";\n`,
      /uses login module org\.apache\.kafka\.common\.security\.oauthbearer\.OAuthBearerLoginModule: kmirror supports PlainLoginModule and ScramLoginModule/,
    );
    expectInvalid(`${GEO_FLOW}us-east.security.protocol = SASL_PLAINTEXT\nus-east.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="${PASSWORD}";\n`, /us-east\.sasl\.mechanism is not set \(MirrorMaker 2 would use GSSAPI\)/);
  });

  it('refuses GSSAPI and OAUTHBEARER, naming the key', () => {
    for (const mechanism of ['GSSAPI', 'OAUTHBEARER']) {
      expectInvalid(
        `${GEO_FLOW}security.protocol = SASL_SSL\nsasl.mechanism = ${mechanism}\nsasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/etc/mm2.keytab" principal="mm2@EXAMPLE.COM";\n`,
        new RegExp(`^MirrorMaker 2 config: sasl\\.mechanism = "${mechanism}": kmirror supports SASL PLAIN and SCRAM`),
      );
    }
  });

  it('refuses an unknown security protocol, a pattern JavaScript cannot use, a config provider placeholder and a mirror name too long', () => {
    expectInvalid(`${GEO_FLOW}us-west.security.protocol = TLS\n`, /us-west\.security\.protocol = "TLS": expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL/);
    expectInvalid(`${GEO_FLOW}topics.exclude = (unclosed\n`, /topics\.exclude: "\(unclosed" is not a regular expression kmirror can use/);
    expectInvalid(String.raw`${GEO_FLOW}us-west->us-east.groups = \\Qapp.\\E.*` + '\n', /us-west->us-east\.groups: .* uses the Java-only regex escape \\Q/);
    expectInvalid(
      `${GEO_FLOW}config.providers = file\nus-east.security.protocol = SASL_SSL\nus-east.sasl.mechanism = PLAIN\nus-east.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="\${file:/etc/mm2/secrets.properties:${PASSWORD}}";\n`,
      /us-east\.sasl\.jaas\.config uses a config provider placeholder/,
    );
    const long = 'a'.repeat(249); // a legal cluster name; `${long}-to-b` is not a legal mirror name
    const err = refusal(`clusters = ${long}, b\n${long}.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\n${long}->b.enabled = true\n`);
    expect(isKmirrorError(err, 'INVALID_CLUSTER_MIRROR_NAME')).toBe(true);
  });
});
