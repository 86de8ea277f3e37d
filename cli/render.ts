// Plain-text rendering for people: aligned tables and one-line progress.
import type { IsrWaitDetails } from '../activities/kafka-admin.ts';
import type { PendingActivity } from '../client/index.ts';
import type { OperationProgress } from '../workflows/messages.ts';

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** "start dr-east: creating 3 destination topics — 2,000 partitions: 1,200 MIRRORING, 800 LOG_TRUNCATION",
 *  and what a pending wait is waiting for (the ISR wait names the brokers it lacks). */
export function progressLine(label: string, p: OperationProgress & { readonly pending?: readonly PendingActivity[] }): string {
  const counts = Object.entries(p.states)
    .sort(([, a], [, b]) => b - a)
    .map(([state, n]) => `${n.toLocaleString('en-US')} ${state}`)
    .join(', ');
  const line = `${label}: ${p.step}${p.total > 0 ? ` — ${p.total.toLocaleString('en-US')} partitions${counts ? `: ${counts}` : ''}` : ''}`;
  const isr = p.pending?.find((a) => a.activity === 'waitForIsr')?.details as Partial<IsrWaitDetails> | undefined;
  if (isr === undefined || !(Number(isr.waiting) > 0)) return line;
  const brokers = isr.missingBrokers ?? [];
  return (
    `${line}; ${isr.waiting} partition(s) lack an in-sync replica` +
    `${brokers.length > 0 ? ` (broker${brokers.length > 1 ? 's' : ''} ${brokers.join(', ')} missing)` : ''}` +
    ` — to go on without ${brokers.length > 1 ? 'them' : 'it'}: kmirror retry ${p.mirror} --override-isr-wait --reason "…"`
  );
}
