// The worker's workflow bundle (workflows/index.ts and what it imports, webpacked by the Temporal
// SDK), built in a worker thread of its own. Bundling in the worker's main thread left webpack and
// its caches on the main V8 heap for good (measured: 26 → 63 MiB used after a full GC). The copy
// activities run on that thread, and their fetch and produce buffers (external memory) force a
// major garbage collection several times a second, each marking the whole heap: a heap 2.4× larger
// cost the runner a third of the bare copier's throughput. A thread's heap is freed when it ends.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import { KmirrorError } from './domain/errors.ts';
import type { Logger } from './log.ts';

export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));
/** Bundled with the workflows: operation durations for the metrics (workflows/interceptors.ts). */
export const WORKFLOW_INTERCEPTORS_PATH = fileURLToPath(new URL('./workflows/interceptors.ts', import.meta.url));

/** Plain CommonJS run by the thread (eval: it needs no TypeScript loader, whoever started us). */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { bundleWorkflowCode } = require(workerData.temporalWorker);
const forward = (level) => (message, meta) => parentPort.postMessage({ log: { level, message, meta: meta === undefined ? undefined : JSON.parse(JSON.stringify(meta)) } });
const logger = { log: (level, m, meta) => forward(level)(m, meta), trace: forward('TRACE'), debug: forward('DEBUG'), info: forward('INFO'), warn: forward('WARN'), error: forward('ERROR') };
bundleWorkflowCode({ workflowsPath: workerData.workflowsPath, workflowInterceptorModules: [workerData.interceptorsPath], logger }).then(
  ({ code }) => parentPort.postMessage({ code }),
  (err) => parentPort.postMessage({ error: String(err && err.stack || err) }),
);
`;

type FromThread = { readonly code: string } | { readonly error: string } | { readonly log: { readonly level: string; readonly message: string; readonly meta?: Record<string, unknown> } };

/** Webpacks the workflows in a thread; resolves with the bundle's code for Worker.create's `workflowBundle`. */
export async function bundleWorkflows(log: Logger): Promise<{ readonly code: string }> {
  const temporalWorker = createRequire(import.meta.url).resolve('@temporalio/worker');
  const thread = new Thread(THREAD_SOURCE, { eval: true, workerData: { temporalWorker, workflowsPath: WORKFLOWS_PATH, interceptorsPath: WORKFLOW_INTERCEPTORS_PATH } });
  try {
    return await new Promise((resolve, reject) => {
      thread.on('message', (m: FromThread) => {
        if ('code' in m) resolve({ code: m.code });
        else if ('error' in m) reject(new KmirrorError('INTERNAL', `bundling the workflows failed: ${m.error}`));
        else if (m.log.level === 'WARN' || m.log.level === 'ERROR') log.warn(`workflow bundle: ${m.log.message}`, m.log.meta);
        else log.debug(`workflow bundle: ${m.log.message}`, m.log.meta);
      });
      thread.on('error', (err) => reject(new KmirrorError('INTERNAL', `bundling the workflows failed: ${err.message}`, {}, { cause: err })));
      thread.on('exit', (code) => reject(new KmirrorError('INTERNAL', `the workflow bundling thread exited (code ${code}) before it answered`)));
    });
  } finally {
    await thread.terminate();
  }
}
