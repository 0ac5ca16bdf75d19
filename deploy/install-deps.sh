#!/usr/bin/env bash
# Installs the Debian 12 packages Petrel needs to build and test. Idempotent:
# when everything is installed already it returns at once without apt-get.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libzmq3-dev libprotobuf-dev protobuf-compiler libabsl-dev
  libgoogle-glog-dev libgflags-dev libgtest-dev libgmock-dev libbenchmark-dev
  ccache
)
# Metrics: prometheus-cpp (with civetweb, its HTTP server).
packages+=(prometheus-cpp-dev)
# The Python module (python/) and its tests: pybind11, NumPy, pytest, and
# torch for the tensor tests (PETREL_WITH_TORCH=0 leaves torch out; those
# tests then skip).
packages+=(python3-dev python3-pybind11 python3-numpy python3-pytest)
# The package tests (tests/package): systemd-analyze checks the units,
# adduser runs in the package's postinst (dpkg-shlibdeps comes with
# build-essential's dpkg-dev).
packages+=(systemd adduser)
# tools/petrel-plot draws the progress CSV with matplotlib.
packages+=(python3-matplotlib)
if [[ "${PETREL_WITH_TORCH:-1}" == 1 ]]; then
  packages+=(python3-torch)
fi
# The cluster tests (tests/cluster) start a real Slurm and a real OpenSSH
# server on this machine.
packages+=(slurm-wlm munge openssh-server openssh-client)
# The Kubernetes tests (tests/cluster/kubernetes_test.py): YAML, the API
# schema (the Kubernetes client's models), and network namespaces joined
# by a bridge for the pods (iproute2; unshare and nsenter are util-linux).
packages+=(python3-yaml python3-kubernetes iproute2 util-linux)
# Real public data sets that Debian ships, converted by
# tools/datasets/petrel-realdata (its test runs on them), and liblinear for
# the quality comparison in docs/training.md.
packages+=(dataset-fashion-mnist r-cran-kernlab r-cran-modeldata liblinear-tools)
# clang builds the libFuzzer target; optional for users, used by CI.
if [[ "${PETREL_WITH_CLANG:-1}" == 1 ]]; then
  packages+=(clang)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
