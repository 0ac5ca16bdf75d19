#!/bin/sh
# Runs one program in every role of a job on this machine, the way PS-Lite's
# launch scripts do (its tests/local.sh, the dmlc tracker): the same command
# is started once as the scheduler, NUM_SERVERS times as a server and
# NUM_WORKERS times as a worker, and only DMLC_* variables tell each process
# its role and where the scheduler is. Passes (exit 0) when every process
# exits 0 and, with DMLC_LOCAL_EXPECT set, every worker printed a line
# holding that text; otherwise prints each process's output and exits 1
# (DMLC_LOCAL_SHOW=1 prints it on success too).
#
#   dmlc_local.sh NUM_SERVERS NUM_WORKERS PROGRAM [ARGS...]
#
# The scheduler's port is a free one on 127.0.0.1. Every process is killed
# after DMLC_LOCAL_TIMEOUT_S seconds (default 60). DMLC_LOCAL_WORKER_PROCESSES
# starts that many worker processes instead of NUM_WORKERS (for PS-Lite
# programs whose threads are workers of their own).
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 NUM_SERVERS NUM_WORKERS PROGRAM [ARGS...]" >&2
  exit 2
fi
num_servers=$1
num_workers=$2
shift 2
limit=${DMLC_LOCAL_TIMEOUT_S:-60}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DMLC_PS_ROOT_URI=127.0.0.1
export DMLC_PS_ROOT_PORT="$port"
export DMLC_NUM_SERVER="$num_servers"
export DMLC_NUM_WORKER="$num_workers"

pids=""
# run NAME ROLE COMMAND...: starts COMMAND as ROLE, its output in $out/NAME.
run() {
  name=$1
  role=$2
  shift 2
  DMLC_ROLE=$role timeout -k 5 "$limit" "$@" > "$out/$name" 2>&1 &
  pids="$pids $name:$!"
}
run scheduler scheduler "$@"
i=0
while [ "$i" -lt "$num_servers" ]; do
  run "server$i" server "$@"
  i=$((i + 1))
done
i=0
while [ "$i" -lt "${DMLC_LOCAL_WORKER_PROCESSES:-$num_workers}" ]; do
  run "worker$i" worker "$@"
  i=$((i + 1))
done

failed=""
for entry in $pids; do
  name=${entry%%:*}
  pid=${entry#*:}
  wait "$pid"
  code=$?
  if [ "$code" -ne 0 ]; then
    failed="$failed $name(exit $code)"
  elif [ -n "${DMLC_LOCAL_EXPECT:-}" ] && [ "${name#worker}" != "$name" ] &&
       ! grep -q -- "$DMLC_LOCAL_EXPECT" "$out/$name"; then
    failed="$failed $name(no line with '$DMLC_LOCAL_EXPECT')"
  fi
done

if [ -n "$failed" ] || [ -n "${DMLC_LOCAL_SHOW:-}" ]; then
  for f in "$out"/*; do
    echo "==== $(basename "$f")"
    cat "$f"
  done
fi
if [ -n "$failed" ]; then
  echo "FAILED:$failed" >&2
  exit 1
fi
echo "PASSED: 1 scheduler, $num_servers servers, $num_workers workers of $1"
