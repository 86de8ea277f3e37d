// `failover`: disaster recovery — make mirror topics writable on the destination now, whether or
// not the source answers (workflows/stop-topics.ts has the steps). The result reports per partition
// the records the destination did not have when it stopped (the RPO, when the source answers).
// Input (Temporal UI: type `failover`, task queue `kmirror`, id `failover:<mirror>:<anything>`):
//   {"mirror": "dr-east", "allTopics": true, "actor": "alice", "reason": "east is down"}
//   {"mirror": "dr-east", "topics": ["orders"], "dryRun": true}
import { stopTopics, type StopTopicsInput, type StopTopicsResult } from './stop-topics.ts';

export type FailoverInput = StopTopicsInput;

export async function failover(input: FailoverInput): Promise<StopTopicsResult> {
  return stopTopics('failover', input);
}
