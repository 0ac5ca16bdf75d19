#!/bin/sh
# Measures server failover: kills a server N times (one per round, each a
# fresh job of 3 servers with 2 replicas) and prints how long its keys went
# unserved, p50 and max (docs/failures.md, "Replicated servers").
#   tools/fault/failover-bench.sh [build dir] [kills] [servers] [replicas]
set -eu
build=${1:-build}
ninja -C "$build" failover_bench >/dev/null
uptime
exec "$build/tests/fault/failover_bench" "${2:-20}" "${3:-3}" "${4:-2}"
