// The Grafana dashboard (ops/grafana-dashboard.json, import it in Grafana with a Prometheus data
// source), written here against Grafana's own schema types (@grafana/schema: `npm test` type-checks
// it) and printed to the JSON by `npm run dashboard`; a unit test fails when the two differ.
import type { Dashboard, DataSourceRef, Panel, RowPanel } from '@grafana/schema';

const ds: DataSourceRef = { type: 'prometheus', uid: '${DS_PROMETHEUS}' };
/** Every per-mirror series is filtered by the dashboard's $mirror variable. */
const sel = (name: string, extra = ''): string => `${name}{mirror=~"$mirror"${extra}}`;
const rate = (name: string): string => `sum by (mirror) (rate(${sel(name)}[$__rate_interval]))`;
const increase = (name: string): string => `sum by (mirror) (increase(${sel(name)}[$__rate_interval]))`;

let nextId = 1;

interface PanelSpec {
  readonly title: string;
  readonly queries: readonly (readonly [expr: string, legend: string])[];
  readonly at: readonly [x: number, y: number, w?: number, h?: number];
  readonly unit: string;
  readonly kind?: 'timeseries' | 'stat';
  readonly description?: string;
  readonly stacked?: boolean;
}

function panel(spec: PanelSpec): Panel {
  const [x, y, w = 12, h = 8] = spec.at;
  return {
    id: nextId++,
    type: spec.kind ?? 'timeseries',
    title: spec.title,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    datasource: ds,
    gridPos: { x, y, w, h },
    targets: spec.queries.map(([expr, legendFormat], i) => ({ refId: String.fromCharCode(65 + i), datasource: ds, expr, legendFormat })),
    fieldConfig: { defaults: { unit: spec.unit, ...(spec.stacked ? { custom: { stacking: { mode: 'normal', group: 'A' } } } : {}) }, overrides: [] },
    options: {},
  };
}

function row(title: string, y: number): RowPanel {
  return { id: nextId++, type: 'row', title, collapsed: false, gridPos: { x: 0, y, w: 24, h: 1 }, panels: [] };
}

const panels: (Panel | RowPanel)[] = [
  row('Lag', 0),
  panel({
    title: 'Lag per topic (records)',
    queries: [[`max by (mirror, topic) (${sel('kmirror_topic_lag_records')})`, '{{mirror}} / {{topic}}']],
    at: [0, 1],
    unit: 'short',
    description: "Source last stable offset − destination end, summed over the topic's partitions being copied.",
  }),
  panel({
    title: 'Lag per topic (age of the oldest unmirrored record)',
    queries: [[`max by (mirror, topic) (${sel('kmirror_topic_lag_seconds')})`, '{{mirror}} / {{topic}}']],
    at: [12, 1],
    unit: 's',
    description: "An upper bound, like MirrorMaker's record-age-ms; 0 when caught up.",
  }),
  panel({
    title: 'Partitions behind',
    queries: [[`count by (mirror) (${sel('kmirror_partition_lag_records')} > 0)`, '{{mirror}}']],
    at: [0, 9, 8],
    unit: 'short',
    kind: 'stat',
    description: 'Partitions with lag > 0 (only those get per-partition series, unless KMIRROR_METRICS_PARTITION_SERIES=all).',
  }),
  panel({ title: 'Worst partitions (records behind)', queries: [[`topk(10, ${sel('kmirror_partition_lag_records')})`, '{{mirror}} / {{topic}}-{{partition}}']], at: [8, 9, 16], unit: 'short' }),
  row('Throughput', 17),
  panel({ title: 'Bytes mirrored per second', queries: [[rate('kmirror_mirrored_bytes_total'), '{{mirror}}']], at: [0, 18], unit: 'Bps' }),
  panel({ title: 'Records mirrored per second', queries: [[rate('kmirror_mirrored_records_total'), '{{mirror}}']], at: [12, 18], unit: 'rps' }),
  panel({
    title: 'Batches re-encoded and merged, fillers written, resyncs (per second)',
    queries: [
      [rate('kmirror_reencoded_batches_total'), '{{mirror}} re-encoded'],
      [rate('kmirror_merged_batches_total'), '{{mirror}} merged'],
      [rate('kmirror_filler_records_total'), '{{mirror}} fillers'],
      [rate('kmirror_copier_resyncs_total'), '{{mirror}} resyncs'],
    ],
    at: [0, 26],
    unit: 'short',
  }),
  panel({
    title: 'Byte budget in use',
    queries: [['kmirror_byte_budget_used_bytes / kmirror_byte_budget_capacity_bytes', '{{instance}}']],
    at: [12, 26],
    unit: 'percentunit',
    description: 'Bytes fetched and not yet acknowledged by the destination, per worker, as a share of KMIRROR_BUDGET_BYTES.',
  }),
  row('States and operations', 34),
  panel({
    title: 'Partitions per state',
    queries: [[`max by (mirror, state) (${sel('kmirror_partitions')})`, '{{mirror}} {{state}}']],
    at: [0, 35],
    unit: 'short',
    stacked: true,
    description: 'From the shared database: every worker reports the same counts, hence max.',
  }),
  panel({ title: 'Failed partitions', queries: [[`max by (mirror) (${sel('kmirror_partitions', ', state="FAILED"')})`, '{{mirror}}']], at: [12, 35, 4], unit: 'short', kind: 'stat' }),
  panel({ title: 'Partitions copied per worker', queries: [[`sum by (instance) (${sel('kmirror_copy_partitions')})`, '{{instance}}']], at: [16, 35, 8], unit: 'short' }),
  panel({
    title: 'Operations (count over the range)',
    queries: [['sum by (operation, outcome) (increase(kmirror_operation_duration_seconds_count[$__range]))', '{{operation}} {{outcome}}']],
    at: [0, 43],
    unit: 'short',
    kind: 'stat',
  }),
  panel({
    title: 'Operation duration p95',
    queries: [['histogram_quantile(0.95, sum by (le, operation) (rate(kmirror_operation_duration_seconds_bucket[$__range])))', '{{operation}}']],
    at: [12, 43],
    unit: 's',
  }),
  row('Sync (consumer groups, topic configs and ACLs) and leases', 51),
  panel({
    title: 'Since the last group-offset sync',
    queries: [[`time() - max by (mirror) (${sel('kmirror_group_sync_last_success_timestamp_seconds')})`, '{{mirror}}']],
    at: [0, 52, 8],
    unit: 's',
    description: 'The runner syncs every KMIRROR_GROUP_SYNC_INTERVAL_MS (10 s by default).',
  }),
  panel({
    title: 'Groups synced / skipped (active on the destination) / unchanged, per second',
    queries: [[`sum by (mirror, result) (rate(${sel('kmirror_group_sync_groups_total')}[$__rate_interval]))`, '{{mirror}} {{result}}']],
    at: [8, 52, 8],
    unit: 'short',
  }),
  panel({
    title: 'Group offsets clamped; sync failures',
    queries: [
      [increase('kmirror_group_sync_clamped_partitions_total'), '{{mirror}} clamped'],
      [increase('kmirror_group_sync_failures_total'), '{{mirror}} failures'],
    ],
    at: [16, 52, 8],
    unit: 'short',
  }),
  panel({
    title: 'Lease takeovers and losses',
    queries: [
      [increase('kmirror_lease_takeovers_total'), '{{mirror}} takeovers'],
      [increase('kmirror_leases_lost_total'), '{{mirror}} lost'],
    ],
    at: [0, 60, 16],
    unit: 'short',
    description: "A takeover: a copy's partitions taken from an owner that stopped renewing (a worker died or lost Postgres).",
  }),
  panel({
    title: 'Records lost to source retention',
    queries: [[increase('kmirror_records_lost_total'), '{{mirror}}']],
    at: [16, 60, 8],
    unit: 'short',
    description: "Source records retention removed before they were mirrored (never expected; `kmirror describe` counts them per partition).",
  }),
  panel({
    title: 'Since the last complete topic config / ACL sync',
    queries: [[`time() - max by (mirror, sync) (${sel('kmirror_topic_sync_last_success_timestamp_seconds')})`, '{{mirror}} {{sync}}']],
    at: [0, 68, 8],
    unit: 's',
    description: 'Both run in the runner\'s discovery round, every KMIRROR_DISCOVERY_INTERVAL_MS (60 s by default); a round that leaves a topic out does not count.',
  }),
  panel({
    title: 'Mirror topics changed by config / ACL sync; topics left out',
    queries: [
      [`sum by (mirror, sync) (increase(${sel('kmirror_topic_sync_changes_total')}[$__rate_interval]))`, '{{mirror}} {{sync}} changed'],
      [`sum by (mirror, sync) (increase(${sel('kmirror_topic_sync_failures_total')}[$__rate_interval]))`, '{{mirror}} {{sync}} left out'],
    ],
    at: [8, 68, 8],
    unit: 'short',
  }),
  panel({
    title: 'Topic ACLs granted / revoked by ACL sync; writers denied',
    queries: [[`sum by (mirror, change) (increase(${sel('kmirror_topic_acl_changes_total')}[$__rate_interval]))`, '{{mirror}} {{change}}']],
    at: [16, 68, 8],
    unit: 'short',
    description: 'denied: principals an ACL lets write a mirror topic, given a DENY WRITE by the read-only guard (lifted at failover).',
  }),
];

export const dashboard: Dashboard & { readonly __inputs: readonly Record<string, string>[] } = {
  // Grafana's import form asks for the Prometheus data source named here.
  __inputs: [{ name: 'DS_PROMETHEUS', label: 'Prometheus', type: 'datasource', pluginId: 'prometheus', pluginName: 'Prometheus' }],
  title: 'kmirror',
  uid: 'kmirror-overview',
  description: 'kmirror: lag, throughput, partition states, operations, consumer-group offset sync and leases (docs/metrics.md).',
  tags: ['kafka', 'kmirror'],
  editable: true,
  graphTooltip: 1,
  refresh: '10s',
  schemaVersion: 39,
  time: { from: 'now-1h', to: 'now' },
  timezone: 'browser',
  templating: {
    list: [
      {
        name: 'mirror',
        label: 'Mirror',
        type: 'query',
        datasource: ds,
        query: { query: 'label_values(kmirror_partitions, mirror)', refId: 'mirrors' },
        includeAll: true,
        multi: true,
        allValue: '.*',
        refresh: 2,
        current: { selected: true, text: ['All'], value: ['$__all'] },
        options: [],
        hide: 0,
        sort: 1,
      },
    ],
  },
  annotations: { list: [] },
  links: [],
  panels,
};

/** The JSON file's text. */
export const dashboardJson = (): string => `${JSON.stringify(dashboard, null, 2)}\n`;
