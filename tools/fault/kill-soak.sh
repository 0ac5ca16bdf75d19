#!/bin/sh
# The soak of worker and scheduler kills (docs/failures.md, "Soak"): KILLS
# rounds of each, every round a fresh job of the real daemons; prints each
# round and the recovery time's p50 and max; exits 1 at the first round
# that did not end correctly (tests/fault/kill_soak.cc says what "correctly"
# means for each).
#   tools/fault/kill-soak.sh [build dir] [kills per kind] [worker|scheduler|both]
set -eu
build=${1:-build}
kills=${2:-50}
kinds=${3:-both}
ninja -C "$build" kill_soak >/dev/null
uptime
data=$(mktemp -d /tmp/petrel-kill-soak.XXXXXX)
trap 'rm -rf "$data"' EXIT
if [ "$kinds" = worker ] || [ "$kinds" = both ]; then
  "$build/tests/fault/kill_soak" worker "$kills" "$data"
fi
if [ "$kinds" = scheduler ] || [ "$kinds" = both ]; then
  "$build/tests/fault/kill_soak" scheduler "$kills"
fi
uptime
