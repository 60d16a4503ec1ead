#!/usr/bin/env bash
# Installs every Debian 12 package trainctl needs to build and test. Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config clang-format
  clang libclang-rt-14-dev  # the ThreadSanitizer + -Wthread-safety build (tests/run.sh tsan)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libspdlog-dev libyaml-cpp-dev libsystemd-dev catch2
  libcpp-httplib-dev  # trainctld's REST API and web console
  libjemalloc-dev  # trainctld's allocator
  libarchive-dev  # job workdir archives: packed by the CLI, unpacked by the agent
  musl-tools  # trainctl-shim's C library (agents/CMakeLists.txt)
  libpq-dev postgresql  # the PostgreSQL store (--store), and the real server its tests start
  python3-torch  # /usr/bin/python3 with torch: the PyTorch DDP example and its tests (label torch)
  python3-grpcio python3-protobuf python3-yaml  # the Python client (clients/python), its tests
  chromium chromium-driver python3-selenium  # the web console's browser test
  iproute2 nftables  # the network partition tests: ip netns, veth pairs, nft rules in a namespace
  dpkg-dev file lintian  # the Debian packages: CPack's dpkg-shlibdeps, and the package test
)
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
