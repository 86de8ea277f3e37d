// Barrel the worker loads as its workflowsPath. One workflow per file, exported here.
export { ping } from './ping.ts';
