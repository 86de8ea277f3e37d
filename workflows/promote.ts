// `promote`: planned switchover — wait (source reachable) until the destination has everything the
// source has and no transaction is open there, stop, copy what arrived meanwhile, then make the
// mirror topics writable: no record is lost once the source's producers have stopped. Refuses with
// CLUSTER_UNREACHABLE when the source does not answer, and PROMOTE_TIMEOUT when the lag does not
// reach 0 (or a source transaction does not end) in time; both point to failover.
// Input (Temporal UI: type `promote`, task queue `kmirror`, id `promote:<mirror>:<anything>`):
//   {"mirror": "dr-east", "allTopics": true, "timeoutSeconds": 300, "actor": "alice", "reason": "planned move"}
import { stopTopics, type PromoteInput, type StopTopicsResult } from './stop-topics.ts';

export type { PromoteInput };

export async function promote(input: PromoteInput): Promise<StopTopicsResult> {
  return stopTopics('promote', input);
}
