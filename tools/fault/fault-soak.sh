#!/bin/sh
# The randomized fault soak (docs/failures.md, "Soak"): for SECONDS (default
# 600), rounds of a fresh job of the real daemons, each hit by one fault
# picked at random (kill -9, SIGSTOP/SIGCONT, partitions, scheduler
# restarts; tests/fault/fault_round.h lists them and what must hold after
# each), until the time is up or a round fails (exit 1, with the daemons'
# output). Partitions need root (network namespaces); without it the other
# faults run. SEED replays a run's choices.
#   tools/fault/fault-soak.sh [build dir] [seconds] [seed]
set -eu
build=${1:-build}
seconds=${2:-600}
cmake --build "$build" --target fault_soak > /dev/null
uptime
"$build/tests/fault/fault_soak" "$seconds" ${3:+"$3"}
uptime
