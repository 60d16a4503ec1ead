#!/usr/bin/env bash
# Builds trainctl and runs every test: unit and integration tests in build/, then the unit
# suites again under AddressSanitizer + UBSan in build-asan/. Installs missing Debian packages
# first. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
bash deploy/install-deps.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --output-on-failure

unit_dirs="common;storage;scheduler;agents;cli;workload"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTRAINCTL_SANITIZE=ON \
  "-DTRAINCTL_TEST_DIRS=$unit_dirs" >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j"$jobs" --output-on-failure
