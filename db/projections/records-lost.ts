// Records lost to source retention, read from the mirror's events since its latest MirrorCreated (a
// deleted mirror's name may be used again): the losses recorded (PartitionRecordsLost), the
// mirror's policy (MirrorCreated.onRecordsLost) and the operators' acceptances
// (RecordsLossAccepted). These events are rare — each is one retention overtaking one partition, or
// one operator decision — so they are read from the log rather than kept in a projection table.
import type { RecordsLostPolicy } from '../../domain/commands.ts';
import { mirrorStreamId } from '../../domain/events.ts';
import { partitionName } from '../../domain/names.ts';
import type { Db, Trx } from '../database.ts';

interface LossEvents {
  readonly policy: RecordsLostPolicy;
  readonly rows: readonly { readonly type: string; readonly position: bigint; readonly data: Record<string, unknown> }[];
}

async function lossEvents(db: Db | Trx, mirror: string): Promise<LossEvents | undefined> {
  const stream = mirrorStreamId(mirror);
  const created = await db.selectFrom('events').select(['position', 'data']).where('stream_id', '=', stream).where('type', '=', 'MirrorCreated').orderBy('position', 'desc').limit(1).executeTakeFirst();
  if (created === undefined) return undefined;
  const rows = await db
    .selectFrom('events')
    .select(['type', 'position', 'data'])
    .where('stream_id', '=', stream)
    .where('type', 'in', ['PartitionRecordsLost', 'RecordsLossAccepted'])
    .where('position', '>', created.position)
    .orderBy('position')
    .execute();
  return { policy: created.data.onRecordsLost === 'fail' ? 'fail' : 'continue', rows };
}

export interface RecordsLostView {
  readonly policy: RecordsLostPolicy;
  /** Records lost per partition (partitionName → count). */
  readonly lost: ReadonlyMap<string, bigint>;
  /** Whether a loss found now in this partition may be skipped: always under `continue`; under
   *  `fail`, when an operator accepted losses in its topic after the partition's last recorded loss. */
  mayContinue(topic: string, partition: number): boolean;
}

/** The mirror's losses, policy and acceptances (a mirror not found: none, `continue`). */
export async function recordsLost(db: Db | Trx, mirror: string): Promise<RecordsLostView> {
  const events = await lossEvents(db, mirror);
  const policy = events?.policy ?? 'continue';
  const lost = new Map<string, bigint>();
  const lastLoss = new Map<string, bigint>();
  const lastAcceptance = new Map<string, bigint>();
  for (const { type, position, data } of events?.rows ?? []) {
    if (type === 'PartitionRecordsLost') {
      const key = partitionName(String(data.topic), Number(data.partition));
      lost.set(key, (lost.get(key) ?? 0n) + BigInt(String(data.to)) - BigInt(String(data.from)));
      lastLoss.set(key, position);
    } else {
      for (const topic of data.topics as string[]) lastAcceptance.set(topic, position);
    }
  }
  return {
    policy,
    lost,
    mayContinue: (topic, partition) => policy === 'continue' || (lastAcceptance.get(topic) ?? -1n) > (lastLoss.get(partitionName(topic, partition)) ?? -1n),
  };
}
