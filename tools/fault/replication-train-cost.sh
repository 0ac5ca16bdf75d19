#!/usr/bin/env bash
# The training cost of replication: the LR example job
# (deploy/examples/lr.textproto: 2 servers, 2 workers, FTRL, BSP) on
# petrel-datagen data, with --replicas=1 and --replicas=2 alternated N
# times, printing each run's examples/s and test logloss and the medians
# (docs/failures.md, "What it costs without failures").
#   tools/fault/replication-train-cost.sh [bin dir] [pairs] [train examples]
set -euo pipefail
bin=${1:-build/bin} pairs=${2:-5} examples=${3:-200000}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=$(mktemp -d /tmp/petrel-train-cost.XXXXXX)
trap 'rm -rf "$data"' EXIT
uptime
"$bin/petrel-datagen" --format=libsvm --train_examples="$examples" \
  --train_out="$data/train.svm" --test_out="$data/test.svm" \
  --test_examples=20000 >/dev/null
run() {
  "$bin/petrel-launch" --config="$here/deploy/examples/lr.textproto" \
    --replicas="$1" --train="$data/train.svm" --test="$data/test.svm" 2>&1 |
    grep -o 'final test_logloss=[0-9.]* .*examples_per_s=[0-9.]*' | head -1 |
    sed 's/final test_logloss=\([0-9.]*\) .*examples_per_s=\([0-9.]*\)/\2 \1/'
}
for _ in $(seq "$pairs"); do
  echo "R=1 $(run 1) R=2 $(run 2)"
done | tee /dev/stderr | awk '
  function median(a, n,   k, j, t) {
    for (k = 2; k <= n; k++)
      for (j = k; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { n++; a[n] = $2; la[n] = $3; b[n] = $5; lb[n] = $6; r[n] = $5 / $2 }
  END { printf "median examples/s: R=1 %.0f, R=2 %.0f; median ratio R=2/R=1 %.3f over %d pairs; median test logloss R=1 %.4f, R=2 %.4f\n",
        median(a, n), median(b, n), median(r, n), n, median(la, n), median(lb, n) }'
uptime
