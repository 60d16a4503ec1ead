#!/usr/bin/env bash
# Installs the Debian 12 packages trainctl needs. Safe to run again.
#   deploy/install-deps.sh          everything to build and test (tests/run.sh, CI)
#   deploy/install-deps.sh --build  only what building trainctld, trainctl-agent and trainctl
#                                   needs (deploy/demo.sh): no browser, PyTorch, PostgreSQL
#                                   server or container tools
set -euo pipefail
build=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev
  libabsl-dev libsqlite3-dev libspdlog-dev libyaml-cpp-dev libsystemd-dev
  libcpp-httplib-dev  # trainctld's REST API and web console
  libjemalloc-dev  # trainctld's allocator
  libarchive-dev  # job workdir archives: packed by the CLI, unpacked by the agent
  libre2-dev  # scheduling.progressPattern: validated by trainctld, matched by the agents
  musl-tools  # trainctl-shim's C library (agents/CMakeLists.txt)
  libpq-dev  # the PostgreSQL store's client library (--store)
)
tests=(
  clang-format catch2
  clang libclang-rt-14-dev  # the ThreadSanitizer + -Wthread-safety build (tests/run.sh tsan)
  postgresql  # the real PostgreSQL server the store's tests start
  python3-torch  # /usr/bin/python3 with torch: the PyTorch DDP example and its tests (label torch)
  python3-grpcio python3-protobuf python3-yaml  # the Python client (clients/python), its tests
  chromium chromium-driver python3-selenium  # the web console's browser test
  iproute2 nftables  # the network partition tests: ip netns, veth pairs, nft rules in a namespace
  dpkg-dev file lintian  # the Debian packages: CPack's dpkg-shlibdeps, and the package test
  skopeo umoci runc  # container images for replicas: the agent pulls (skopeo), unpacks (umoci)
                     # and runs (runc) them
  docker-registry buildah busybox-static  # the image cache's tests: a real registry on loopback
                                          # and tiny busybox images built offline
  gdb python3.11-dbg  # the agent's stack captures of hung replicas: gdb, and the py-bt of
                      # Debian's Python (agents/stack_capture.h) and its tests
)
case "${1:-}" in
  --build) packages=("${build[@]}") ;;
  "") packages=("${build[@]}" "${tests[@]}") ;;
  *) echo "usage: deploy/install-deps.sh [--build]" >&2; exit 2 ;;
esac
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
