#!/usr/bin/env bash
# Builds trainctl and runs every test, installing missing Debian packages first. Each build is
# built once, then its tests run in parallel under ctest:
#   layers  tests/check_layers.sh: no module includes one above it (README, Architecture)
#   main    build/: gcc, every unit and integration test
#   asan    build-asan/: gcc with AddressSanitizer + UBSan, the unit and server tests
# Every build keeps line tables only (-g1): enough for backtraces and sanitizer reports, and the
# full debug info would add a fifth to the build time.
#   tsan    build-tsan/: clang with ThreadSanitizer and -Wthread-safety -Werror; builds the
#           programs and the unit tests (not the integration tests, the CLI's tests and the
#           benchmarks, which it would not run), runs the tests that do not go through gRPC
#           (those labelled "grpc" do), since Debian's gRPC is not built for TSan
# With arguments, runs only the named parts, in the order given: `tests/run.sh tsan`.
# Prints how long each part took, also after a failure. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then parts=(layers main asan tsan); fi
for part in "${parts[@]}"; do
  case "$part" in
    layers | main | asan | tsan) ;;
    *)
      echo "tests/run.sh: unknown part '$part' (layers, main, asan, tsan)" >&2
      exit 2
      ;;
  esac
done

timings=()
# timed NAME COMMAND...: runs the command and records how long it took.
timed() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$(printf '%-16s %3dm %02ds' "$name" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)))")
}

main_build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
  cmake --build build -j"$jobs"
}
main_tests() { ctest --test-dir build -j"$jobs" --output-on-failure; }

asan_build() {
  local unit_dirs="common;storage;scheduler;agents;cli;server;workload"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DTRAINCTL_SANITIZE=ON \
    "-DTRAINCTL_TEST_DIRS=$unit_dirs" >/dev/null
  cmake --build build-asan -j"$jobs"
}
asan_tests() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j"$jobs" --output-on-failure
}

tsan_build() {
  # Not tests/cli: those tests go through gRPC, so TSan would not run them (the CLI itself is built).
  local unit_dirs="common;storage;scheduler;agents;server;workload"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DCMAKE_CXX_COMPILER=clang++ \
    -DTRAINCTL_TSAN=ON "-DTRAINCTL_TEST_DIRS=$unit_dirs" >/dev/null
  cmake --build build-tsan -j"$jobs"
}
tsan_tests() {
  TSAN_OPTIONS=second_deadlock_stack=1 \
    ctest --test-dir build-tsan -j"$jobs" --output-on-failure --label-exclude 'grpc|integration'
}

# Printed however the script ends.
report() {
  echo "tests/run.sh: wall time per part:"
  if [ ${#timings[@]} -gt 0 ]; then printf '  %s\n' "${timings[@]}"; fi
  printf '  %-16s %3dm %02ds\n' total $((SECONDS / 60)) $((SECONDS % 60))
}
trap report EXIT

timed install-deps bash deploy/install-deps.sh
for part in "${parts[@]}"; do
  case "$part" in
    layers) timed "layers" bash tests/check_layers.sh ;;
    main)
      timed "main build" main_build
      timed "main tests" main_tests
      ;;
    asan)
      timed "asan build" asan_build
      timed "asan tests" asan_tests
      ;;
    tsan)
      timed "tsan build" tsan_build
      timed "tsan tests" tsan_tests
      ;;
  esac
done
echo "tests/run.sh: every part passed"
