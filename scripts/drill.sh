#!/usr/bin/env bash
# The drill tier (`npm run test:drill`): tests that take a broker away need replicas, so the source
# and the destination are re-formatted with 3 brokers each for them (their data is discarded) and
# back to 1 afterwards, whatever the outcome. Postgres and Temporal keep running.
set -uo pipefail
cd "$(dirname "$0")/.."
stack() { npx tsx scripts/stack.ts "$@"; }
stack up --quiet || exit $?
reshape() { stack down --only source,dest && stack up --quiet --only source,dest --source-nodes "$1" --dest-nodes "$1"; }
reshape 3 || exit $?
npx vitest run --project drill
status=$?
if ! reshape 1; then
  echo "drill: could not restore the 1-broker source and destination" >&2
  [ "$status" -eq 0 ] && status=1
fi
exit "$status"
