# The Petrel image, petrel:VERSION, that deploy/kubernetes/ runs:
#   podman build -t petrel:0.1.0 .        (or docker build, buildah bud)
# docs/kubernetes.md tells how to build and push it. Two stages: the builder
# installs the build dependencies (deploy/install-deps.sh) and builds the
# programs (Release, without CUDA); the runtime stage holds those programs,
# the Debian packages of the shared libraries they load, and a non-root user
# `petrel` (uid 10001, as the manifests' securityContext says).
# tests/cluster/kubernetes_test.py (image) checks the package list below
# against what the built programs load.

# Debian 12. Override to build on a local copy, e.g. one made by
# debootstrap and imported, where the registry is out of reach.
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS builder
# Parallel compile jobs.
ARG JOBS=4
WORKDIR /src
COPY deploy/install-deps.sh deploy/install-deps.sh
# Not needed for the programs: torch (Python tests), clang (fuzzing).
RUN PETREL_WITH_TORCH=0 PETREL_WITH_CLANG=0 deploy/install-deps.sh \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DPETREL_WITH_CUDA=OFF \
        -DPETREL_BUILD_TESTS=OFF -DPETREL_BUILD_PYTHON=OFF \
        -DPETREL_USE_CCACHE=OFF \
    && cmake --build /build -j"${JOBS}" --target \
        petrel-scheduler petrel-server petrel-worker petrel-launch \
        petrel-datagen petrel-predict petrel-export petrel-bench \
        petrelctl petrel-keygen \
    && mkdir /out \
    && for p in /build/bin/petrel-*; do \
         [ "$(head -c 4 "$p" | tail -c 3)" = ELF ] || continue; \
         strip --strip-unneeded -o "/out/${p##*/}" "$p"; \
       done \
    && cp deploy/kubernetes/petrel-wait-for-host /out/

FROM ${DEBIAN_IMAGE}
# The shared libraries the programs load, nothing else.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libabsl20220623 libc6 libgcc-s1 libgflags2.2 libgoogle-glog0v6 \
        libprotobuf32 libstdc++6 libzmq5 \
        libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libcivetweb1 \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 petrel \
    && useradd --system --uid 10001 --gid petrel --home-dir /var/lib/petrel \
        --shell /usr/sbin/nologin petrel \
    && mkdir -p /var/lib/petrel /var/cache/petrel /etc/petrel \
    && chown petrel:petrel /var/lib/petrel /var/cache/petrel
COPY --from=builder /out/ /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/petrel
# The van (--port) and the metrics and /healthz endpoint (--metrics_port)
# as the manifests set them.
EXPOSE 9090 9100
CMD ["petrel-launch", "--help"]
