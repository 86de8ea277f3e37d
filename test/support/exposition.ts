// Prometheus' text exposition format, as the worker serves it on /metrics: the samples by series.

/** `name{labels}` → value, every sample line of `text` (comments and blank lines skipped). */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** A worker's /metrics on loopback `port`: the text and its samples. */
export async function scrapeWorker(port: number): Promise<{ text: string; samples: Map<string, number> }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return { text, samples: parseExposition(text) };
}
