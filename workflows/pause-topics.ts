// `pauseTopics`: stop mirroring some (or all) topics of a mirror; the destination keeps its log and
// stays read-only. Returns once no copy fetches those partitions any more and they are PAUSED.
// Input (Temporal UI: type `pauseTopics`, task queue `kmirror`, id `pause:<mirror>:<anything>`):
//   {"mirror": "dr-east", "topics": ["orders"], "actor": "alice", "reason": "maintenance"}  or  {"mirror": "dr-east", "allTopics": true}
import { changeTopics, type TopicsChangeInput, type TopicsChangeResult } from './change-topics.ts';

export type PauseTopicsInput = TopicsChangeInput;

export async function pauseTopics(input: PauseTopicsInput): Promise<TopicsChangeResult> {
  return changeTopics('pauseTopics', 'pause', input);
}
