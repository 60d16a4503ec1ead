#!/bin/bash
# The long fuzz runs of docs/developers/fuzzing.md: every target of tests/fuzz/ until it has run
# RUNS inputs (10,000,000 unless told), all three at once, from the seeds and from what earlier runs
# of this build found. Prints a row per target (executions, seconds, executions per second, crashes)
# and exits non-zero when a target failed; its log and the input that failed it are under
# BUILD/fuzz/long/.
#
#   tests/fuzz/long_run.sh [BUILD] [RUNS] [TARGET...]
#
# BUILD is a TRAINCTL_FUZZ build, build-fuzz by default: the one docs/developers/fuzzing.md
# configures without ASan (UBSan alone), for speed. The ASan build (build-asan) works too, at a half
# to a sixth of the speed. TARGETs (spec_parse_fuzz, rest_json_fuzz, core_agent_fuzz) pick some of
# them; all three by default. Each run draws its own seed (printed at the top of its log).
set -u
cd "$(dirname "$0")/../.."

build=${1:-build-fuzz}
runs=${2:-10000000}
targets=("${@:3}")
if [ ${#targets[@]} -eq 0 ]; then targets=(spec_parse_fuzz rest_json_fuzz core_agent_fuzz); fi
out=$build/fuzz/long

for target in "${targets[@]}"; do
  if [ ! -x "$build/bin/$target" ]; then
    echo "long_run.sh: $build/bin/$target is missing; build it first" \
      "(docs/developers/fuzzing.md)" >&2
    exit 2
  fi
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "long_run.sh: RUNS must be a positive number of inputs, got '$runs'" >&2
  exit 2
fi
mkdir -p "$out"

# run_one TARGET: its log goes to $out/TARGET.log, "EXIT_STATUS SECONDS" to $out/TARGET.result.
run_one() {
  local target=$1 start rc=0
  local corpora=("$build/fuzz/corpus/$target" "tests/fuzz/corpus/${target%_fuzz}")
  if [ -d "$build/fuzz/seeds/$target" ]; then corpora+=("$build/fuzz/seeds/$target"); fi
  mkdir -p "$build/fuzz/corpus/$target"
  start=$(date +%s)
  # 64 MiB of stack, as the ASan unit tests have (tests/run.sh).
  (
    ulimit -s 65536
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$build/bin/$target" -runs="$runs" -timeout=25 -entropic=0 -print_final_stats=1 \
      -artifact_prefix="$out/$target-" "${corpora[@]}"
  ) >"$out/$target.log" 2>&1 || rc=$?
  echo "$rc $(($(date +%s) - start))" >"$out/$target.result"
}

for target in "${targets[@]}"; do run_one "$target" & done
wait

failed=0
printf '| %-16s | %12s | %8s | %8s | %s |\n' target executions seconds "exec/s" crashes
for target in "${targets[@]}"; do
  read -r rc seconds <"$out/$target.result"
  executions=$(awk '/^stat::number_of_executed_units/ {print $2}' "$out/$target.log")
  if [ "$rc" = 0 ]; then crashes=0; else crashes="1 (exit $rc; see $out/$target.log)"; failed=1; fi
  printf '| %-16s | %12s | %8s | %8s | %s |\n' "$target" "${executions:-?}" "$seconds" \
    "$((${executions:-0} / (seconds > 0 ? seconds : 1)))" "$crashes"
done
exit $failed
