// Barrel the worker loads as its workflowsPath. One workflow per file, exported here.
export { ping } from './ping.ts';
export { createMirror } from './create-mirror.ts';
export { alterMirror } from './alter-mirror.ts';
export { startTopics } from './start-topics.ts';
export { pauseTopics } from './pause-topics.ts';
export { resumeTopics } from './resume-topics.ts';
export { mirrorRunner } from './mirror-runner.ts';
export { failover } from './failover.ts';
export { promote } from './promote.ts';
export { retryPartitions } from './retry-partitions.ts';
export { deleteMirror } from './delete-mirror.ts';
export { failback } from './failback.ts';
