#!/usr/bin/env bash
# The drill tier (`npm run test:drill`): tests that take a destination broker away need replicas, so
# the destination is re-formatted with 3 brokers for them (its data is discarded) and back to 1
# afterwards, whatever the outcome. The other parts of the stack keep running.
set -uo pipefail
cd "$(dirname "$0")/.."
stack() { npx tsx scripts/stack.ts "$@"; }
stack up --quiet || exit $?
stack down --only dest && stack up --quiet --only dest --dest-nodes 3 || exit $?
npx vitest run --project drill
status=$?
if ! (stack down --only dest && stack up --quiet --only dest --dest-nodes 1); then
  echo "drill: could not restore the 1-broker destination" >&2
  [ "$status" -eq 0 ] && status=1
fi
exit "$status"
