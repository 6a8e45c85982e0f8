#!/usr/bin/env bash
# Runs one of Warren's libFuzzer targets for a bounded time.
#   scripts/fuzz.sh <envelope|wsop|pattern|amqp|all> [seconds per target, default 60]
# Builds Fuzz/ (a separate package) with -sanitize=fuzzer, starts from the seeds in
# Fuzz/corpus/<target>, replays every earlier finding kept in Fuzz/regressions/<target>,
# and exits non-zero on a crash, leak of a fatalError property, or timeout. New inputs
# libFuzzer finds go to a scratch corpus under /tmp, not into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-all}"; seconds="${2:-60}"
swift build --package-path Fuzz -c release --build-path .build/fuzz \
  -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library 1>&2
bin=".build/fuzz/release/warren-fuzz"
targets=("$target"); [ "$target" = all ] && targets=(envelope wsop pattern amqp)
for t in "${targets[@]}"; do
  work="$(mktemp -d)"; cp Fuzz/corpus/"$t"/* "$work"/
  mkdir -p Fuzz/regressions/"$t"
  if compgen -G "Fuzz/regressions/$t/*" >/dev/null; then
    WARREN_FUZZ_TARGET="$t" "$bin" Fuzz/regressions/"$t"/* 2>&1 | tail -1
  fi
  echo "fuzz $t: ${seconds}s" >&2
  WARREN_FUZZ_TARGET="$t" "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$work/crash-" -print_final_stats=1 "$work" 2>&1 \
    | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==|SUMMARY|Fatal|.*fatal error|artifact_prefix|Test unit written)" || true
  if compgen -G "$work/crash-*" >/dev/null; then
    echo "fuzz $t: FINDING kept in $work (copy it to Fuzz/regressions/$t/ once fixed)" >&2
    exit 1
  fi
  echo "fuzz $t: no finding" >&2
done
