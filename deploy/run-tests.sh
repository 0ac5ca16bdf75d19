#!/usr/bin/env bash
# Installs dependencies, builds Petrel and runs the whole test suite:
#   1. a normal build and every test (unit, integration, fault; with the
#      CUDA kernels compiled when nvcc is present);
#   2. the unit tests again under ASan+UBSan, built with clang when present,
#      which also checks the lock annotations (-Wthread-safety, as errors);
#   3. the unit tests again under ThreadSanitizer (clang; PETREL_TSAN=0
#      leaves them out);
#   4. the wire decoder's libFuzzer target for a bounded time (clang).
# After step 1 the Python tests (python/tests, pytest) run against the
# normal build with Debian's /usr/bin/python3, which has the packages
# install-deps.sh adds (a python3 earlier on PATH, e.g. pyenv's, may not).
# Compiles go through ccache when it is installed (install-deps.sh adds it).
# Build trees: build/ (normal), build-asan/, build-tsan/, build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${PETREL_JOBS:-2}"

deploy/install-deps.sh

# CUDA: when nvcc is present the normal build compiles the CUDA kernels for
# one architecture (catches compile errors on machines without a GPU; the
# cuda-labelled tests then skip, visibly). The sanitizer and fuzz builds
# leave CUDA out (nvcc takes no -fsanitize).
cuda_args=()
if command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90-real)
fi

# Line tables only (-g1): backtraces keep file and line, and the build takes
# about a fifth less time than with full debug information.
echo "== build (RelWithDebInfo, -g1)"
python_args=()
if [[ -x /usr/bin/python3 ]]; then
  python_args=(-DPython3_EXECUTABLE=/usr/bin/python3)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "${cuda_args[@]}" \
  "${python_args[@]}" | grep -E "Petrel (CUDA|Python)"
cmake --build build -j"$jobs"
echo "== tests"
# Each run starts with an empty directory for the tests' temporary files.
rm -rf build/test-tmp && mkdir -p build/test-tmp
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300

if compgen -G "build/python/petrel/_petrel*.so" > /dev/null; then
  echo "== Python tests (pytest)"
  python="$(grep -Po '^Python3_EXECUTABLE:[A-Z]+=\K.*' build/CMakeCache.txt)"
  PYTHONPATH="$PWD/build/python" timeout 300 "$python" -m pytest -q -rs \
    -p no:cacheprovider python/tests
else
  echo "== Python tests skipped: the petrel module was not built (see 'Petrel Python' above)"
fi

echo "== unit tests under ASan+UBSan"
asan_env=()
if command -v clang++ > /dev/null; then
  asan_env=(CC=clang CXX=clang++)
  echo "(clang, with -Wthread-safety)"
fi
env "${asan_env[@]}" cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DPETREL_SANITIZE=ON -DPETREL_WITH_CUDA=OFF \
  > /dev/null
# Only what `ctest -L unit` runs: daemons and multi-process tests are not
# run under the sanitizers.
cmake --build build-asan -j"$jobs" --target petrel_unit_tests
rm -rf build-asan/test-tmp && mkdir -p build-asan/test-tmp
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit --timeout 300

if [[ "${PETREL_TSAN:-1}" == 1 ]] && command -v clang++ > /dev/null; then
  echo "== unit tests under ThreadSanitizer (clang)"
  # -O1: TSan's usual level; test executables are listed when ctest runs
  # them (PRE_TEST), not at build time. base/testing/tsan.supp names the
  # races inside uninstrumented libraries that TSan cannot order.
  CC=clang CXX=clang++ cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DPETREL_TSAN=ON \
    -DPETREL_WITH_CUDA=OFF -DPETREL_BUILD_PYTHON=OFF \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST > /dev/null
  cmake --build build-tsan -j"$jobs" --target petrel_unit_tests
  rm -rf build-tsan/test-tmp && mkdir -p build-tsan/test-tmp
  TSAN_OPTIONS="halt_on_error=1 allocator_may_return_null=1 suppressions=$PWD/base/testing/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L unit --timeout 300
fi

if [[ "${PETREL_FUZZ:-1}" == 1 ]] && command -v clang++ > /dev/null; then
  echo "== fuzz the wire decoder (bounded)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPETREL_BUILD_FUZZERS=ON -DPETREL_BUILD_TESTS=OFF -DPETREL_WITH_CUDA=OFF > /dev/null
  cmake --build build-fuzz -j"$jobs" --target wire_codec_fuzzer
  # New inputs go to build-fuzz/corpus; the seeds in the source tree stay as they are.
  mkdir -p build-fuzz/corpus
  build-fuzz/bin/wire_codec_fuzzer -max_total_time="${PETREL_FUZZ_SECONDS:-30}" \
    -rss_limit_mb=2048 build-fuzz/corpus tests/fuzz/corpus/wire_codec
fi
echo "run-tests: all passed"
