#!/usr/bin/env bash
# Builds Petrel with CUDA, checks the CUDA kernels against the CPU ones and
# times them, on a machine with an NVIDIA GPU and the CUDA toolkit:
#   1. configure + build build-gpu/ with PETREL_WITH_CUDA=ON (sm_90 only,
#      override with PETREL_CUDA_ARCH=80-real etc.);
#   2. the cuda-labelled tests (kernels/*_cuda_test.cc); a skipped test
#      fails this script, since it means no GPU was seen;
#   3. petrel-cuda-bench: embedding gather/scatter GB/s against the device's
#      peak memory bandwidth, GEMM GFLOP/s, dedup keys/s;
#   4. the embedding + MLP model on CUDA against the CPU (mlp_model_test),
#      then one training job (deploy/examples/mlp.textproto, 1 server + 1
#      worker) with --device=cpu and --device=cuda on the same data.
# NOTE: written on a machine without a GPU; it has not run on a GPU yet.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${PETREL_JOBS:-$(nproc)}"
build="${PETREL_GPU_BUILD:-build-gpu}"

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L; then
  echo "gpu-check: no NVIDIA GPU visible (nvidia-smi failed)" >&2
  exit 1
fi

echo "== configure + build ($build, CUDA ${PETREL_CUDA_ARCH:-90-real})"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETREL_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${PETREL_CUDA_ARCH:-90-real}" > "$build.configure.log"
grep "Petrel CUDA" "$build.configure.log"
targets=(petrel-cuda-bench mlp_model_test petrel-launch petrel-scheduler
         petrel-server petrel-worker petrel-datagen)
for op in device_memory dedup embedding dense sigmoid_cross_entropy optimizer_rows; do
  targets+=("${op}_cuda_test")
done
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

echo "== CUDA tests"
log="$build/cuda-tests.log"
ctest --test-dir "$build" -L cuda --output-on-failure --timeout 300 | tee "$log"
if grep -q "(Skipped)" "$log"; then
  echo "gpu-check: some CUDA tests skipped (no usable device?)" >&2
  exit 1
fi

echo "== benchmark"
"$build/bin/petrel-cuda-bench" "${PETREL_BENCH_ITERATIONS:-50}"
echo "== embedding + MLP model: CUDA against CPU"
"$build/worker/model/mlp_model_test" --gtest_filter='*Cuda*' | tee "$build/mlp-cuda.log"
if grep -q "SKIPPED" "$build/mlp-cuda.log"; then
  echo "gpu-check: the MLP CUDA test skipped" >&2
  exit 1
fi

echo "== training: --device=cpu, then --device=cuda"
data="$build/gpu-check-data"
mkdir -p "$data"
"$build/bin/petrel-datagen" --format=criteo --interactions --interaction_rank=2 \
  --interaction_scale=3 --zipf_exponent=1.5 --train_out="$data/train.tsv" \
  --train_examples=300000 --test_out="$data/test.tsv" --test_examples=50000
for device in cpu cuda; do
  "$build/bin/petrel-launch" --config=deploy/examples/mlp.textproto \
    --num_servers=1 --num_workers=1 --train="$data/train.tsv" \
    --test="$data/test.tsv" --device="$device" | grep -E "device=|final"
done
echo "gpu-check: all passed"
