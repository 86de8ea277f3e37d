// `resumeTopics`: mirror PAUSED topics again; each partition continues from its destination end.
// Input (Temporal UI: type `resumeTopics`, task queue `kmirror`, id `resume:<mirror>:<anything>`):
//   {"mirror": "dr-east", "topics": ["orders"]}  or  {"mirror": "dr-east", "allTopics": true}
import { changeTopics, type TopicsChangeInput, type TopicsChangeResult } from './change-topics.ts';

export type ResumeTopicsInput = TopicsChangeInput;

export async function resumeTopics(input: ResumeTopicsInput): Promise<TopicsChangeResult> {
  return changeTopics('resumeTopics', 'resume', input);
}
