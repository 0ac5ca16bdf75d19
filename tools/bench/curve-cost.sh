#!/usr/bin/env bash
# Measures what CURVE security costs (docs/security.md), in one run: Petrel
# push and pull on a local 1 server + 1 worker cluster, one request in
# flight, plaintext and with CURVE (petrel-launch --curve: fresh keys per
# process), alternating the two PAIRS times for each request shape:
#   1mib      one key of 1 MiB of floats (metric gbps)
#   sparse1   100,000 keys x 1 float, uniform over 10^8 (metric keys_per_s)
#   sparse16  100,000 keys x 16 floats (metric keys_per_s)
# and the raw ZeroMQ baseline at 1 MiB with and without CURVE (ZeroMQ's own
# cost, no Petrel code). Prints per shape and workload the medians and the
# median of the pair-by-pair ratios CURVE / plaintext.
#
#   tools/bench/curve-cost.sh BIN PAIRS [DURATION_S]
#   tools/bench/curve-cost.sh build/bin 3 1
# On a machine other jobs load, run it as `chrt -f 10 tools/bench/...`
# (real-time priority, inherited by every process it starts), or the
# figures measure those jobs (docs/security.md, "Cost").
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,17p' "$0" >&2
  exit 2
fi
bin=$1 pairs=$2 duration=${3:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
declare -A shape_flags=(
  [1mib]="--value_bytes=1048576"
  [sparse1]="--num_keys=100000 --dim=1 --key_dist=uniform"
  [sparse16]="--num_keys=100000 --dim=16 --key_dist=uniform")
for pair in $(seq "$pairs"); do
  for mode in plain curve; do
    launch_flag=() bench_flag=()
    if [[ $mode == curve ]]; then launch_flag=(--curve) bench_flag=(--curve); fi
    "$bin/petrel-bench" "${bench_flag[@]}" --workload=raw_zmq \
      --value_bytes=1048576 --duration_s="$duration" 2>/dev/null |
      sed "s/^/pair=$pair mode=$mode shape=raw /" >>"$out"
    for shape in 1mib sparse1 sparse16; do
      # shellcheck disable=SC2086
      "$bin/petrel-launch" "${launch_flag[@]}" --num_servers=1 \
        --num_workers=1 -- "$bin/petrel-bench" --workload=push,pull \
        --duration_s="$duration" ${shape_flags[$shape]} 2>/dev/null |
        grep '^\[worker 0\] workload=' | sed 's/^\[worker 0\] //' |
        sed "s/^/pair=$pair mode=$mode shape=$shape /" >>"$out"
    done
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = dict(kv.split('=', 1) for kv in line.split() if '=' in kv)
    metric = 'keys_per_s' if f['shape'].startswith('sparse') else 'gbps'
    w = f['workload'].replace('_curve', '')
    rows[(f['shape'], w, metric)].setdefault(f['pair'], {})[f['mode']] = float(f[metric])
print('shape     workload  metric      plaintext    curve        curve/plain')
for (shape, w, metric), pairs in sorted(rows.items()):
    done = [p for p in pairs.values() if 'plain' in p and 'curve' in p]
    if not done: continue
    plain = statistics.median(p['plain'] for p in done)
    curve = statistics.median(p['curve'] for p in done)
    ratio = statistics.median(p['curve'] / p['plain'] for p in done)
    print(f'{shape:9} {w:9} {metric:11} {plain:<12.4g} {curve:<12.4g} {ratio:.2f} ({len(done)} pairs)')
PY
