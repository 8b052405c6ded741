#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz into build-fuzz/ (clang,
# -DYFS_FUZZ=ON: -fsanitize=fuzzer,address,undefined) and runs each for
# SECONDS_PER_TARGET seconds (default 20) on its seed corpus.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]
#
# Exits non-zero if any target finds a crash, a leak, a timeout (> 10 s on one
# input) or an out-of-memory (> 2048 MB RSS), after printing the path of the
# input that triggered it (build-fuzz/artifacts/<target>-crash-...).
# Reproduce one with:  build-fuzz/<target> <that path>
# New inputs found while fuzzing go to build-fuzz/corpus/<target>/; the seeds
# in tests/fuzz/corpus/ are only read (regenerate them with make_corpus.py).
# FUZZ_TARGETS="fuzz_page" limits the run to some targets.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
targets=${FUZZ_TARGETS:-"fuzz_thrift fuzz_footer fuzz_page fuzz_stream fuzz_nest fuzz_tree"}
build="$root/build-fuzz"
jobs=$(nproc 2>/dev/null || echo 2)

# clang and its libFuzzer runtime (Debian 12: clang 14, libclang-rt-14-dev).
if ! command -v clang >/dev/null ||
   ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
     clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-dev
fi

echo "== fuzz: configuring and building into $build"
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DYFS_FUZZ=ON \
  -DYFS_TESTS=OFF >/dev/null
# shellcheck disable=SC2086
if ! cmake --build "$build" -j"$jobs" --target $targets >"$build/build.log" 2>&1; then
  cat "$build/build.log"
  echo "== fuzz: build failed"
  exit 1
fi

mkdir -p "$build/artifacts"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
failed=()
for t in $targets; do
  seeds="$root/tests/fuzz/corpus/$t"
  work="$build/corpus/$t"
  log="$build/$t.log"
  mkdir -p "$work"
  echo "== fuzz: $t for ${secs}s (log: $log)"
  rc=0
  "$build/$t" "$work" "$seeds" -max_total_time="$secs" -max_len=1048576 \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" >"$log" 2>&1 || rc=$?
  # executions, then the last status line: coverage, corpus size, RSS
  grep -E '^Done [0-9]+ runs' "$log" || true
  grep -E '^#[0-9]+' "$log" | tail -n 1 || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "!! $t failed (exit $rc):"
    grep -E 'ERROR: |runtime error|SUMMARY|Test unit written to|Slowest unit|out-of-memory' \
      "$log" | head -20 || true
    tail -5 "$log"
  fi
done

if ((${#failed[@]})); then
  echo "== fuzz: FAILED: ${failed[*]}; crash inputs:"
  for t in "${failed[@]}"; do grep -h 'Test unit written to' "$build/$t.log" || true; done
  exit 1
fi
echo "== fuzz: all targets ran ${secs}s each without a finding"
