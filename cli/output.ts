// How the CLI reports a failure: the shared error output (errors-output.ts, also used by the
// worker's entry point), re-exported where the CLI's commands look for it.
export { errorBody, printError, processOutput, type ErrorBody, type Output } from '../errors-output.ts';
