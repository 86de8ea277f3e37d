// ops/grafana-dashboard.json: written from ops/grafana-dashboard.ts, which is typed with Grafana's
// own dashboard schema (@grafana/schema; `npm test` type-checks it first), and checked here against
// the metrics the worker serves (a panel naming a series nobody exports stays empty). The e2e test
// (prometheus.e2e.test.ts) runs every query in a real Prometheus.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Panel, RowPanel } from '@grafana/schema';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../metrics/metrics.ts';
import { ByteBudget } from '../../kafka/budget.ts';
import { dashboard, dashboardJson } from '../../ops/grafana-dashboard.ts';
import { projectRoot } from '../../config.ts';

const panels = (dashboard.panels ?? []) as (Panel | RowPanel)[];
const queries = panels.flatMap((p) => (p.type === 'row' ? [] : ((p as Panel).targets ?? []).map((t) => ({ panel: p.title, expr: String((t as { expr?: unknown }).expr ?? '') }))));

describe('the Grafana dashboard', () => {
  it('ops/grafana-dashboard.json is what ops/grafana-dashboard.ts writes (`npm run dashboard`)', () => {
    expect(readFileSync(join(projectRoot, 'ops', 'grafana-dashboard.json'), 'utf8')).toBe(dashboardJson());
  });

  it('lays out unique panels on the 24-column grid without overlaps', () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Set<string>();
    for (const p of panels) {
      const { x = 0, y = 0, w = 0, h = 0 } = p.gridPos ?? {};
      expect(x + w, p.title).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        expect(cells.has(`${i},${j}`), `${p.title} overlaps at ${i},${j}`).toBe(false);
        cells.add(`${i},${j}`);
      }
    }
  });

  it('queries only series the worker exports, and every lag, throughput, state, operation and sync series', async () => {
    const m = new Metrics({ partitionSeries: 'lagging', budget: new ByteBudget(1), partitionStates: () => Promise.resolve([]) });
    const exported = new Set((await m.registry.getMetricsAsJSON()).map((x) => x.name));
    const used = new Set(queries.flatMap((q) => [...q.expr.matchAll(/\bkmirror_[a-z_]+/g)].map((x) => x[0].replace(/_(bucket|count|sum)$/, ''))));
    for (const name of used) expect(exported.has(name), `${name} is not exported`).toBe(true);
    for (const name of ['kmirror_topic_lag_records', 'kmirror_topic_lag_seconds', 'kmirror_mirrored_bytes_total', 'kmirror_partitions', 'kmirror_operation_duration_seconds', 'kmirror_group_sync_last_success_timestamp_seconds', 'kmirror_lease_takeovers_total']) {
      expect(used.has(name), `no panel shows ${name}`).toBe(true);
    }
    expect(queries.length).toBeGreaterThan(15);
    for (const q of queries) expect(q.expr.trim(), q.panel).not.toBe('');
  });

  it('filters by a $mirror variable fed from the exported mirrors', () => {
    const variable = dashboard.templating?.list?.find((v) => v.name === 'mirror');
    expect(variable?.type).toBe('query');
    expect(JSON.stringify(variable?.query)).toContain('label_values(kmirror_partitions, mirror)');
  });
});
