// The search attributes every kmirror workflow carries (registered by the local stack as Keyword):
// MirrorName, MirrorOperation, and MirrorTopic when the operation is about exactly one topic. Set
// by the workflow itself on its first task, so a workflow started from the Temporal UI has them too.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { WorkflowKind } from './messages.ts';

export const MirrorName = defineSearchAttributeKey('MirrorName', SearchAttributeType.KEYWORD);
export const MirrorTopic = defineSearchAttributeKey('MirrorTopic', SearchAttributeType.KEYWORD);
export const MirrorOperation = defineSearchAttributeKey('MirrorOperation', SearchAttributeType.KEYWORD);

export function searchAttributePairs(of: { readonly mirror: string; readonly workflow: WorkflowKind; readonly topics?: readonly string[] }): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [
    { key: MirrorName, value: of.mirror },
    { key: MirrorOperation, value: of.workflow },
  ];
  if (of.topics?.length === 1) pairs.push({ key: MirrorTopic, value: of.topics[0]! });
  return pairs;
}
