#!/usr/bin/env bash
# Installs dependencies, builds Petrel (Release) and runs the main job on this
# machine: petrel-datagen writes Criteo-like training and test data with a
# known ground-truth model, then a local cluster of 2 servers and 2 workers
# trains logistic regression (FTRL) on it, printing progress every few
# seconds and the final test logloss and AUC. Then the same cluster shape
# runs petrel-bench's verified push/pull workloads.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${PETREL_JOBS:-2}"
examples="${PETREL_DEMO_EXAMPLES:-1000000}"

PETREL_WITH_CLANG=0 deploy/install-deps.sh
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DPETREL_BUILD_TESTS=OFF > /dev/null
cmake --build build-release -j"$jobs" --target petrel-scheduler petrel-server \
  petrel-worker petrel-launch petrel-bench petrel-datagen

bin=build-release/bin
data=build-release/demo-data
mkdir -p "$data"
echo "== generating $examples training and $((examples / 5)) test examples"
"$bin/petrel-datagen" --train_out="$data/train.svm" --train_examples="$examples" \
  --test_out="$data/test.svm" --test_examples=$((examples / 5)) --seed=11
echo "== training logistic regression: 2 servers, 2 workers"
"$bin/petrel-launch" --config=deploy/examples/lr.textproto \
  --train="$data/train.svm" --test="$data/test.svm"
echo "== push/pull benchmark: 2 servers, 2 workers"
"$bin/petrel-launch" --num_servers=2 --num_workers=2 -- \
  "$bin/petrel-bench" --workload=push,pull,pushpull,latency \
  --value_bytes=1048576 --num_keys=256 --inflight=4 --duration_s=2
