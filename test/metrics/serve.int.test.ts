// The worker's metrics endpoint over real loopback HTTP: it stops even while a scraper holds a
// keep-alive connection busy (the stack's Prometheus scrapes every 2 s, inside Node's 5 s keep-alive
// timeout, so a connection that was busy at close time would otherwise stay open and keep the
// worker's process alive for good — seen as a worker that never exited after SIGINT in CI).
import { Agent, get } from 'node:http';
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics, serveMetrics } from '../../metrics/metrics.ts';

const agents: Agent[] = [];
afterEach(() => agents.splice(0).forEach((a) => a.destroy()));

function scrape(port: number, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/metrics', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

describe('serveMetrics', () => {
  it('serves /metrics and closes while a keep-alive scrape is in flight', async () => {
    const metrics = new Metrics({ partitionSeries: 'lagging' });
    let slow = false;
    new Gauge({
      name: 'test_slow_collect',
      help: 'makes a scrape take a while when asked to',
      registers: [metrics.registry],
      async collect() {
        if (slow) await new Promise((r) => setTimeout(r, 300));
        this.set(1);
      },
    });
    const server = await serveMetrics(metrics, '127.0.0.1', 0);
    const agent = new Agent({ keepAlive: true });
    agents.push(agent);
    expect(await scrape(server.port, agent)).toBe(200);

    slow = true;
    const inFlight = scrape(server.port, agent).catch(() => 'cut');
    await new Promise((r) => setTimeout(r, 50));
    const closed = server.close().then(() => 'closed');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise((r) => (timer = setTimeout(() => r('still open after 3 s'), 3_000)));
    expect(await Promise.race([closed, deadline])).toBe('closed');
    clearTimeout(timer);
    await inFlight;
    await expect(scrape(server.port, new Agent())).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
