// Plain-text rendering for people: aligned tables and one-line progress.
import type { IsrWaitDetails } from '../activities/kafka-admin.ts';
import type { PendingActivity } from '../client/index.ts';
import type { OperationProgress, PartitionProgress } from '../workflows/messages.ts';
import type { PatternFilter } from '../domain/names.ts';

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
 *  the first partitions not done yet when the progress lists them (`unfinished`, not in `done`),
 *  each with what is known of its offsets, and what a pending wait is waiting for (the ISR wait
 *  names the brokers it lacks). */
export function progressLine(label: string, p: OperationProgress & { readonly pending?: readonly PendingActivity[] }, done: readonly string[] = []): string {
  const counts = Object.entries(p.states)
    .sort(([, a], [, b]) => b - a)
    .map(([state, n]) => `${n.toLocaleString('en-US')} ${state}`)
    .join(', ');
  let line = `${label}: ${p.step}${p.total > 0 ? ` — ${p.total.toLocaleString('en-US')} partitions${counts ? `: ${counts}` : ''}` : ''}`;
  if (p.unfinished !== undefined && p.unfinished.length > 0) {
    const notDone = Object.entries(p.states).reduce((n, [state, count]) => (done.includes(state) ? n : n + count), 0);
    const more = notDone - p.unfinished.length;
    line += `; not yet: ${p.unfinished.map(partitionProgress).join(', ')}${more > 0 ? ` (+${more.toLocaleString('en-US')} more)` : ''}`;
  }
  const isr = p.pending?.find((a) => a.activity === 'waitForIsr')?.details as Partial<IsrWaitDetails> | undefined;
  if (isr === undefined || !(Number(isr.waiting) > 0)) return line;
  const brokers = isr.missingBrokers ?? [];
  return (
    `${line}; ${isr.waiting} partition(s) lack an in-sync replica` +
    `${brokers.length > 0 ? ` (broker${brokers.length > 1 ? 's' : ''} ${brokers.join(', ')} missing)` : ''}` +
    ` — to go on without ${brokers.length > 1 ? 'them' : 'it'}: kmirror retry ${p.mirror} --override-isr-wait --reason "…"`
  );
}

/** "orders-7 LOG_TRUNCATION", "orders-3 STOPPING 120 behind" (both ends known), "orders-1 MIRRORING at 5000". */
function partitionProgress(p: PartitionProgress): string {
  const at = `${p.topic}-${p.partition} ${p.state}`;
  if (p.sourceEnd != null && p.destinationEnd != null) {
    const behind = BigInt(p.sourceEnd) - BigInt(p.destinationEnd);
    return `${at} ${(behind > 0n ? behind : 0n).toLocaleString('en-US')} behind`;
  }
  return p.lastMirroredOffset != null ? `${at} at ${p.lastMirroredOffset}` : at;
}

/** `line` cut to a terminal's width (a wrapped line cannot be rewritten in place). */
export function fitTo(line: string, columns: number | undefined): string {
  if (columns === undefined || columns < 10 || line.length < columns) return line;
  return `${line.slice(0, columns - 2)}…`;
}

/** A group or principal filter for people: its include patterns, `except` its exclude ones; `none`
 *  when nothing is included. */
export function filterText(f: PatternFilter): string {
  return f.include.length === 0 ? 'none' : `${f.include.join(' ')}${f.exclude.length > 0 ? ` except ${f.exclude.join(' ')}` : ''}`;
}
