#!/usr/bin/env bash
# The many-small-keys table of issue 11: push and pull of 100,000 keys x 1
# float, 100,000 x 16 and 10,000 x 16 with uniform keys, and of 20,000
# Zipf(1.1) keys (duplicates included) x 1, 16 and 64 floats, each against
# raw ZeroMQ moving the same bytes (raw_zmq_kv), paired in one run by
# pair-ratio.sh on a local 1 server + 1 worker cluster, one request in
# flight. Prints one line per row: the medians of keys_per_s and of the
# pairwise ratio. FLAG... go to every petrel-bench run (for example
# --max_pull_part_bytes=0 to pull whole).
#
#   tools/bench/sparse-rows.sh BIN PAIRS [FLAG...]
#   tools/bench/sparse-rows.sh build/bin 5
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
bin=$1 pairs=$2
shift 2
here=$(dirname "$0")
rows=(
  "--num_keys=100000 --dim=1 --key_dist=uniform"
  "--num_keys=100000 --dim=16 --key_dist=uniform"
  "--num_keys=10000 --dim=16 --key_dist=uniform"
  "--num_keys=20000 --dim=1 --key_dist=zipf"
  "--num_keys=20000 --dim=16 --key_dist=zipf"
  "--num_keys=20000 --dim=64 --key_dist=zipf"
)
for row in "${rows[@]}"; do
  for workload in push pull; do
    # shellcheck disable=SC2086 # the row is a list of flags
    "$here/pair-ratio.sh" "$bin" "$workload" - 1 "$pairs" $row "$@" 2>/dev/null
  done
done
