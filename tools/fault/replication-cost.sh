#!/usr/bin/env bash
# The throughput cost of replication: petrel-bench's sparse push (100,000
# uniform one-float keys per request) on 2 local servers and 1 worker, jobs
# with --replicas=1 and --replicas=2 alternated N times (each 1 s of
# pushing), printing each round and the medians of keys/s and their ratio
# taken pair by pair (docs/failures.md, "Replicated servers").
#   tools/fault/replication-cost.sh [bin dir] [pairs] [inflight]
set -euo pipefail
bin=${1:-build/bin} pairs=${2:-8} inflight=${3:-4}
uptime
run() {
  "$bin/petrel-launch" --num_servers=2 --num_workers=1 --replicas="$1" -- \
    "$bin/petrel-bench" --workload=push --num_keys=100000 --dim=1 \
    --key_dist=uniform --inflight="$inflight" --duration_s=1 |
    grep -o ' keys_per_s=[0-9.]*' | head -1 | cut -d= -f2
}
for _ in $(seq "$pairs"); do
  r1=$(run 1) r2=$(run 2)
  echo "R=1 $r1 R=2 $r2"
done | tee /dev/stderr | awk '
  function median(a, n,   k, j, t) {
    for (k = 2; k <= n; k++)
      for (j = k; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { n++; a[n] = $2; b[n] = $4; r[n] = $4 / $2 }
  END { printf "median keys/s: R=1 %.0f, R=2 %.0f; median ratio R=2/R=1 %.3f over %d pairs\n",
        median(a, n), median(b, n), median(r, n), n }'
