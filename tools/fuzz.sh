#!/usr/bin/env bash
# fuzz.sh — build the libFuzzer targets with clang under ASan+UBSan, replay every seed
# corpus (tests/fuzz/corpus/<target>/), then fuzz each target for FUZZ_SECONDS (default 15) with
# its dictionary (tests/fuzz/<target>.dict).
# New inputs found go to a scratch folder, not into the repository.
# KCACHE_WERROR=ON in the environment builds with -Werror (CI); without it warnings only warn.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh --fuzz
export PATH="$PATH:/usr/local/cuda/bin"
# KCACHE_WERROR=ON (set by .ci/run) makes any compiler warning an error; a user's run leaves it OFF.
CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_FUZZ=ON \
  -DKCACHE_BUILD_TESTS=OFF -DKCACHE_BUILD_TOOLS=OFF "-DKCACHE_SANITIZE=address;undefined" \
  "-DKCACHE_WERROR=${KCACHE_WERROR:-OFF}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_entry fuzz_expr fuzz_program fuzz_bundle fuzz_spec fuzz_manifest
secs=${FUZZ_SECONDS:-15}
scratch=$(mktemp -d /tmp/kcache-fuzz-XXXXXX)
trap 'rm -rf "$scratch" /tmp/kcfuzz-*' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
total=0
targets=(entry expr program bundle spec manifest)
for t in "${targets[@]}"; do
  bin=build-fuzz/tests/fuzz/fuzz_$t
  seeds=tests/fuzz/corpus/$t
  n=$(ls "$seeds" | wc -l)
  "$bin" -runs=0 "$seeds" >"$scratch/$t.replay" 2>&1 || { tail -30 "$scratch/$t.replay"; exit 1; }
  mkdir -p "$scratch/$t"
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -dict="tests/fuzz/$t.dict" "$scratch/$t" "$seeds" \
    >"$scratch/$t.log" 2>&1 \
    || { tail -40 "$scratch/$t.log"; exit 1; }
  execs=$(grep -o 'Done [0-9]* runs' "$scratch/$t.log" | grep -o '[0-9]*' || echo 0)
  total=$((total + execs))
  echo "fuzz_$t: replayed $n seeds, $execs executions in ${secs}s (dictionary: $(grep -c '^"' "tests/fuzz/$t.dict") tokens), no crash"
done
echo "fuzz: $total executions, 0 crashes"
echo "fuzz: ${#targets[@]} passed, 0 failed"
