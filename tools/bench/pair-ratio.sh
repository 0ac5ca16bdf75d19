#!/usr/bin/env bash
# Measures a Petrel workload against the raw ZeroMQ baseline in one run,
# alternating the two (0.5 s each) N times on a local 1 server + 1 worker
# cluster, and prints the medians: both sides and the ratio taken pair by
# pair. On a shared, noisy machine this ratio is far steadier than two
# separate runs.
#
#   tools/bench/pair-ratio.sh BIN WORKLOAD VALUE_BYTES INFLIGHT PAIRS [FLAG...]
#   tools/bench/pair-ratio.sh build/bin pull 1048576 1 8
#   tools/bench/pair-ratio.sh build/bin latency 4 1 12     # p50 round trips
#   tools/bench/pair-ratio.sh build/bin push - 1 5 --num_keys=100000 --dim=1 \
#       --key_dist=uniform                                  # many small keys
#
# With extra petrel-bench flags (FLAG...; VALUE_BYTES "-" leaves
# --value_bytes out, for --dim) the baseline is raw_zmq_kv, which moves the
# request's keys and values, and the metric is keys_per_s.
set -euo pipefail
if [[ $# -lt 5 ]]; then
  sed -n '2,17p' "$0" >&2
  exit 2
fi
bin=$1 workload=$2 value_bytes=$3 inflight=$4 pairs=$5
shift 5
raw=raw_zmq metric=gbps
if [[ $# -gt 0 ]]; then raw=raw_zmq_kv metric=keys_per_s; fi
if [[ $workload == latency ]]; then raw=raw_zmq_latency metric=p50_us; fi
size_flag=()
if [[ $value_bytes != - ]]; then size_flag=(--value_bytes="$value_bytes"); fi
list=$(for _ in $(seq "$pairs"); do printf '%s,%s,' "$raw" "$workload"; done)
# --io_cpu=N places the server's request chain on CPU N too (the raw
# baseline stays unpinned: petrel-bench pins only its Petrel runs).
launch_flags=()
for flag in "$@"; do
  if [[ $flag == --io_cpu=* ]]; then launch_flags+=(--server_io_cpu="${flag#--io_cpu=}"); fi
done
"$bin/petrel-launch" --num_servers=1 --num_workers=1 "${launch_flags[@]}" \
  -- "$bin/petrel-bench" \
  --workload="${list%,}" "${size_flag[@]}" --inflight="$inflight" \
  --duration_s=0.5 "$@" |
  grep -o " $metric=[0-9.]*" | cut -d= -f2 | paste - - |
  awk -v w="$workload" -v v="$value_bytes" -v i="$inflight" -v m="$metric" \
    -v f="$*" '
    function median(a, n,   s, k, j, t) {
      for (k = 1; k <= n; k++) s[k] = a[k]
      for (k = 2; k <= n; k++)
        for (j = k; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
      return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
    }
    { raw[NR] = $1; pet[NR] = $2; ratio[NR] = $2 / $1 }
    END {
      if (NR == 0) { print "no result lines" > "/dev/stderr"; exit 1 }
      printf "workload=%s value_bytes=%s inflight=%s pairs=%d raw_%s=%.2f petrel_%s=%.2f ratio=%.2f%s\n",
        w, v, i, NR, m, median(raw, NR), m, median(pet, NR), median(ratio, NR),
        (f == "" ? "" : " flags=" f)
    }'
