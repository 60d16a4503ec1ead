#!/usr/bin/env bash
# Builds trainctl and runs every test, installing missing Debian packages first. Each build is
# built once, then its tests run in parallel under ctest:
#   layers  tests/check_layers.sh: no module includes one above it
#           (docs/developers/architecture.md, "Dependencies point one way")
#   main    build/: gcc, every unit and integration test
#   package after main, in build/: the Debian packages (cmake --build build --target package),
#           then tests/package/package_test.sh: lintian, dpkg -i, the daemons from /usr/bin with
#           /etc/trainctl's configs running a job, dpkg --purge (docs/operators/install.md).
#           Needs root
#           (sudo otherwise); refuses a machine where trainctl is installed
#   asan    build-asan/: clang with AddressSanitizer + UBSan, the unit and server tests; with
#           TRAINCTL_FUZZ its libraries also carry libFuzzer's coverage (-fsanitize=fuzzer-no-link),
#           so the fuzz targets of tests/fuzz/ are three more programs of this build, not a build
#           of their own
#   fuzz    after asan, with its programs: each fuzz target for 60 s (-max_total_time=60), all
#           at once, from its seeds (tests/fuzz/corpus/<name>/, and examples/*.yaml for the spec
#           parser) and the corpus of earlier runs in build-asan/fuzz/corpus/<target>/, where it
#           adds what it finds (never in the source tree). Fails on any crash, sanitizer report,
#           broken invariant, leak or input slower than 25 s; the input that did it is left in
#           build-asan/fuzz/artifacts/ and the run's log in build-asan/fuzz/<target>.log
#   tsan    build-tsan/: clang with ThreadSanitizer; builds only the test programs it runs and
#           what they need, and runs the tests that do not go through gRPC (those labelled
#           "grpc" do), since Debian's gRPC is not built for TSan. The lock annotations of every
#           module (-Wthread-safety -Werror) are checked by the asan build, which is clang too
#           and builds every program
# Every build keeps line tables only (-g1): enough for backtraces and sanitizer reports, and the
# full debug info would add a fifth to the build time. Every build is a unity build
# (CMAKE_UNITY_BUILD: up to 8 sources of a target compiled as one), which parses the heavy gRPC,
# Protobuf and Catch2 headers once per batch instead of once per file, and took the three builds
# from 33 to 45 minutes (quiet and loaded machines) to 14 (CHANGELOG.md). So names in
# anonymous namespaces must be unique within a target (a clash fails here). Builds made by hand
# are per file, which rebuilds less after an edit.
# With arguments, runs only the named parts, in the order given: `tests/run.sh tsan`.
# Prints how long each part took, also after a failure. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then parts=(layers main package asan fuzz tsan); fi
for part in "${parts[@]}"; do
  case "$part" in
    layers | main | package | asan | fuzz | tsan) ;;
    *)
      echo "tests/run.sh: unknown part '$part' (layers, main, package, asan, fuzz, tsan)" >&2
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
  # Tests on, also in a build dir deploy/demo.sh configured without them.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
    -DTRAINCTL_BUILD_TESTS=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
  cmake --build build -j"$jobs"
}
main_tests() { ctest --test-dir build -j"$jobs" --output-on-failure; }
# The packages of the main build (all of it: CPack installs every component from it).
package_build() {
  main_build
  cmake --build build -j"$jobs" --target package >/dev/null
}

asan_build() {
  local unit_dirs="common;storage;scheduler;agents;cli;server;workload"
  # A build-asan/ configured for gcc (before the fuzz targets) starts again: CMake cannot switch
  # a build dir's compiler.
  if grep -qs '^CMAKE_CXX_COMPILER:.*g++' build-asan/CMakeCache.txt; then rm -rf build-asan; fi
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_COMPILER=clang++ -DTRAINCTL_SANITIZE=ON -DTRAINCTL_FUZZ=ON \
    "-DTRAINCTL_TEST_DIRS=$unit_dirs" >/dev/null
  cmake --build build-asan -j"$jobs"
}
asan_tests() {
  # 64 MiB of stack: libstdc++'s std::regex recurses once per character matched, and the CLI
  # tests match whole outputs; clang's ASan frames with the fuzzer's coverage overflow 8 MiB there.
  (
    ulimit -s 65536
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan -j"$jobs" --output-on-failure
  )
}

fuzz_targets=(spec_parse_fuzz rest_json_fuzz core_agent_fuzz)
# fuzz_one TARGET: runs one fuzz target for 60 s; its output goes to build-asan/fuzz/TARGET.log
# and its exit status to build-asan/fuzz/TARGET.rc. -entropic=0: with every library instrumented,
# the entropic schedule's bookkeeping took most of the time; without it a target runs about twice
# the inputs in a minute, and reached more coverage in the runs measured. A fixed seed
# (TRAINCTL_FUZZ_SEED to change it): a commit's runs try the same inputs in the same order, as far
# as 60 s reaches on the machine, so a crash found here is found again by a rerun; long runs
# (docs/developers/fuzzing.md) draw their own seeds.
fuzz_one() {
  local target=$1 dir=build-asan/fuzz rc=0
  local corpora=("$dir/corpus/$target" "tests/fuzz/corpus/${target%_fuzz}")
  if [ -d "$dir/seeds/$target" ]; then corpora+=("$dir/seeds/$target"); fi
  mkdir -p "$dir/corpus/$target" "$dir/artifacts"
  # timeout: a report of a hang or of running out of memory forks the symbolizer from a process
  # whose other threads may hold the sanitizer's locks; such a fork was seen to spin for good.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 timeout -k 10 180 \
    "build-asan/bin/$target" -max_total_time=60 -timeout=25 -entropic=0 -print_final_stats=1 \
    -seed="${TRAINCTL_FUZZ_SEED:-20261126}" \
    -artifact_prefix="$dir/artifacts/$target-" "${corpora[@]}" >"$dir/$target.log" 2>&1 || rc=$?
  echo $rc >"$dir/$target.rc"
}
# Runs every fuzz target at once: 60 s of wall time in all (each gets a share of the cores).
fuzz_run() {
  local target failed=0 log
  rm -f build-asan/fuzz/*.rc
  for target in "${fuzz_targets[@]}"; do fuzz_one "$target" & done
  wait
  for target in "${fuzz_targets[@]}"; do
    log=build-asan/fuzz/$target.log
    if [ "$(cat "build-asan/fuzz/$target.rc" 2>/dev/null)" = 0 ]; then
      printf '  %-16s %s executions, no crash\n' "$target" \
        "$(awk '/^stat::number_of_executed_units/ {print $2}' "$log")"
    else
      failed=1
      echo "tests/run.sh: $target failed; the end of $log:" >&2
      tail -n 40 "$log" >&2
    fi
  done
  return $failed
}

tsan_build() {
  # Not tests/cli: those tests go through gRPC, so TSan would not run them (the CLI itself is built).
  local unit_dirs="common;storage;scheduler;agents;server;workload"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_COMPILER=clang++ \
    -DTRAINCTL_TSAN=ON "-DTRAINCTL_TEST_DIRS=$unit_dirs" >/dev/null
  # The test programs of those folders that TSan runs (not agent_stream_test and
  # server_grpc_test, which go through gRPC), and what they start (workload, trainctl-shim).
  cmake --build build-tsan -j"$jobs" --target common_test storage_test scheduler_test \
    agents_test server_test
}
tsan_tests() {
  # The programs left unbuilt show as *_NOT_BUILT tests: not run.
  TSAN_OPTIONS=second_deadlock_stack=1 \
    ctest --test-dir build-tsan -j"$jobs" --output-on-failure --label-exclude 'grpc|integration' \
    --exclude-regex '_NOT_BUILT'
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
    package)
      timed "package build" package_build
      timed "package test" bash tests/package/package_test.sh build
      ;;
    asan)
      timed "asan build" asan_build
      timed "asan tests" asan_tests
      ;;
    fuzz) timed "fuzz" fuzz_run ;;
    tsan)
      timed "tsan build" tsan_build
      timed "tsan tests" tsan_tests
      ;;
  esac
done
echo "tests/run.sh: every part passed"
