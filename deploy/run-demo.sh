#!/usr/bin/env bash
# Installs dependencies, builds Petrel (Release) and runs the main job on this
# machine: a local cluster of 2 servers and 2 workers running petrel-bench's
# push, pull, push-pull and latency workloads, each verified (pulls must
# return exactly what was pushed or summed). Prints one result line per
# workload and worker.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${PETREL_JOBS:-2}"

PETREL_WITH_CLANG=0 deploy/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DPETREL_BUILD_TESTS=OFF > /dev/null
cmake --build build-release -j"$jobs" --target petrel-scheduler petrel-server \
  petrel-worker petrel-launch petrel-bench

bin=build-release/bin
exec "$bin/petrel-launch" --num_servers=2 --num_workers=2 -- \
  "$bin/petrel-bench" --workload=push,pull,pushpull,latency \
  --value_bytes=1048576 --num_keys=256 --inflight=4 --duration_s=3
