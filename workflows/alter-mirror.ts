// `alterMirror`: change a mirror's sync filters after its creation — the consumer groups whose
// offsets are synced and the principals whose topic ACLs are. A filter field given replaces that
// field; one left out keeps its value. Recorded as MirrorGroupFilterChanged / MirrorAclFilterChanged
// (only what changes); the runner reads the filters at its next round.
// Input (Temporal UI: type `alterMirror`, task queue `kmirror`, id `alter:<mirror>:<12 hex>`):
//   {"mirror": "dr-east", "acls": {"include": ["User:orders-.*"]}, "actor": "alice", "reason": "…"}
import { setHandler } from '@temporalio/workflow';
import { asFailure, authorizeRequest, checkFilters, checkRequester, invalid, metadataOf, setSearchAttributes, short, type FilterInput } from './common.ts';
import { progressQuery, type Requester } from './messages.ts';
import type { PatternFilter as Filter } from '../domain/names.ts';

export interface AlterMirrorInput extends Requester {
  readonly mirror: string;
  /** Consumer groups whose offsets are synced (whole-name patterns; include [] syncs none). */
  readonly groups?: FilterInput;
  /** Principals whose topic ACLs are synced (whole-name patterns; include [] turns ACL sync off). */
  readonly acls?: FilterInput;
}

export interface AlterMirrorResult {
  readonly mirror: string;
  readonly groups: Filter;
  readonly acls: Filter;
  /** The filters that changed (empty: the mirror had these settings already; nothing recorded). */
  readonly changed: readonly ('groups' | 'acls')[];
}

const SHAPE = '{"mirror": string, "groups"?: {"include"?: string[], "exclude"?: string[]}, "acls"?: {"include"?: string[], "exclude"?: string[]}, "actor"?: string, "reason"?: string}';

export async function alterMirror(input: AlterMirrorInput): Promise<AlterMirrorResult> {
  if (typeof input?.mirror !== 'string') throw invalid('alterMirror', '"mirror" must be a string', SHAPE);
  if (input.groups === undefined && input.acls === undefined) throw invalid('alterMirror', 'give "groups" or "acls" (or both)', SHAPE);
  checkFilters('alterMirror', input, SHAPE);
  checkRequester('alterMirror', input, SHAPE);
  const { mirror } = input;
  setSearchAttributes({ mirror, workflow: 'alterMirror' });
  let step = 'checking the request';
  setHandler(progressQuery, () => ({ workflow: 'alterMirror', mirror, step, done: step === 'done', total: 0, states: {} }));
  const metadata = metadataOf(input);
  try {
    await authorizeRequest('alterMirror', { mirror }, input);
    const view = await short.requireMirror({ mirror, topics: [] });
    const merged = (given: FilterInput | undefined, current: Filter | undefined): Filter => ({
      include: [...(given?.include ?? current?.include ?? [])],
      exclude: [...(given?.exclude ?? current?.exclude ?? [])],
    });
    const same = (a: Filter, b: Filter | undefined) => JSON.stringify(a) === JSON.stringify(b);
    const groups = merged(input.groups, view.groups);
    const acls = merged(input.acls, view.acls);
    const changed: ('groups' | 'acls')[] = [];
    step = 'recording the filters';
    if (!same(groups, view.groups)) {
      await short.applyMirrorCommand({ command: { type: 'SetGroupFilter', mirror, ...groups }, metadata });
      changed.push('groups');
    }
    if (!same(acls, view.acls)) {
      await short.applyMirrorCommand({ command: { type: 'SetAclFilter', mirror, ...acls }, metadata });
      changed.push('acls');
    }
    step = 'done';
    return { mirror, groups, acls, changed };
  } catch (err) {
    throw asFailure(err);
  }
}
