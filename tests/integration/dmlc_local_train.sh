#!/bin/sh
# dmlc_local.sh with petrel-worker training: generates a small libsvm data
# set, then runs `petrel-worker --job=train` with the LR job config of
# deploy/examples/ as the scheduler, 2 servers and 2 workers from DMLC_*
# variables alone, and expects worker 0's final evaluation line.
#
#   dmlc_local_train.sh BIN_DIR SOURCE_DIR
set -eu
bin=$1
src=$2
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"$bin/petrel-datagen" --train_out="$data/train.svm" --train_examples=20000 \
  --test_out="$data/test.svm" --test_examples=2000 --index_bits=16 --seed=3
DMLC_LOCAL_SHOW=1 "$(dirname "$0")/dmlc_local.sh" 2 2 \
  "$bin/petrel-worker" --bind=127.0.0.1 --job=train \
  --config="$src/deploy/examples/lr.textproto" --train="$data/train.svm" \
  --test="$data/test.svm" --epochs=1 > "$data/run.log" 2>&1 || {
  cat "$data/run.log"
  exit 1
}
cat "$data/run.log"
grep -q "PASSED" "$data/run.log"
grep -q "final test_logloss=" "$data/run.log"
