#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh — build the libFuzzer targets with clang under ASan+UBSan, with the library itself
# instrumented for coverage (tests/fuzz/CMakeLists.txt), replay every seed corpus
# (tests/fuzz/corpus/<target>/), then fuzz each target for FUZZ_SECONDS (default 15) with its
# dictionary (tests/fuzz/<target>.dict), and say how many edges of the code each one reached.
# New inputs found go to a scratch folder, not into the repository.
# Most targets are structure-aware: a custom mutator decodes the format, changes one field, section or
# record, and writes it again with its lengths and checksums right, so mutations reach the parsers
# behind the checks (entry: mutate_entry.h; JSON: mutate_json.h; RESP, stats files, text files, the
# toolkit's manifests: in their targets).  README "Reliability" has the table of what each reaches.
# The seeds are objects kcache writes, made again by tools/fuzz_seeds.sh when a format changes.
# Cost: CI runs FUZZ_SECONDS=7 (.ci/run): 15 targets x 7 s of fuzzing, plus the build and the
# replays: at 8 s a target the whole script took 213 s on a busy 2-core machine (library built);
# keep it near 3 minutes when a target is added (lower FUZZ_SECONDS).
# KCACHE_WERROR=ON in the environment builds with -Werror (CI); without it warnings only warn.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh --fuzz
export PATH="$PATH:/usr/local/cuda/bin"
# entry, bundle: raw bytes; entry_sums, entry_sig: the entry mutator (checksums, MAC, signature made right);
# bundle_sums: checksums made right around the fuzzer's bytes; sections: an entry built from the fuzzer's
# sections (tests/fuzz/harness.h); redis: RESP replies from a fake server; image: images, IMAGES references
# and unit records (the second level of the format); spec, manifest: JSON.
# FUZZ_TARGETS="a b" fuzzes only those; FUZZ_BUILD names the build folder (default build-fuzz).
default=(entry entry_sums sections expr program bundle bundle_sums spec manifest redis params image entry_sig)
default+=(files toolkit) # stats files, the record, profiles, key files; toolkit manifests, reads and memo
default+=(spec_direct) # the spec direct mode's memo
default+=(config) # configuration files (system, directory) and remote lists
default+=(s3_list) # an S3 listing page (a build with the HTTP back end)
default+=(redis_cluster) # Redis Cluster's slot map and MOVED/ASK (generated from the input's choices)
targets=(${FUZZ_TARGETS:-${default[@]}})
# ---- bundles, structure-aware: every version (v1..v4) and record kind, checksums rebuilt
# (tests/fuzz/fuzz_bundle_struct.c; seeds: tools/fuzz_bundle_seeds.py) ----
[ -n "${FUZZ_TARGETS:-}" ] || targets+=(bundle_struct)
# ---- end of the bundle block ----
bdir=${FUZZ_BUILD:-build-fuzz}
# KCACHE_WERROR=ON (set by .ci/run) makes any compiler warning an error; a user's run leaves it OFF.
CC=clang cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCACHE_FUZZ=ON \
  -DKCACHE_BUILD_TESTS=OFF -DKCACHE_BUILD_TOOLS=OFF "-DKCACHE_SANITIZE=address;undefined" \
  "-DKCACHE_WERROR=${KCACHE_WERROR:-OFF}" >/dev/null
cmake --build "$bdir" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
secs=${FUZZ_SECONDS:-15}
scratch=$(mktemp -d /tmp/kcache-fuzz-XXXXXX)
crashes=$bdir/crashes   # an input that crashes is kept here (the scratch folder is removed)
mkdir -p "$crashes"
trap 'rm -rf "$scratch" /tmp/kcfuzz-* /dev/shm/kcfuzz-*' EXIT
# intercept_tls_get_addr=0: as in tools/test.sh (a sanitizer runtime bug that crashes the leak check).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
total=0
summary=()
for t in "${targets[@]}"; do
  bin=$bdir/tests/fuzz/fuzz_$t
  seeds=tests/fuzz/corpus/$t
  n=$(ls "$seeds" | wc -l)
  "$bin" -runs=0 "$seeds" >"$scratch/$t.replay" 2>&1 || { tail -30 "$scratch/$t.replay"; exit 1; }
  mkdir -p "$scratch/$t"
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict="tests/fuzz/$t.dict" \
    -artifact_prefix="$crashes/$t-" "$scratch/$t" "$seeds" >"$scratch/$t.log" 2>&1 \
    || { grep -m1 -A30 'ERROR:' "$scratch/$t.log" || true; tail -8 "$scratch/$t.log"
         echo "fuzz_$t: FAILED (the input is in $crashes/; replay it: $bin <file>)"; exit 1; }
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t.log" | grep -o '[0-9]*$' || echo 0)
  # libFuzzer's "cov: N" on its status lines: edges of instrumented code reached; the last is the final count.
  seed_edges=$(grep -o 'cov: [0-9]*' "$scratch/$t.replay" | tail -1 | grep -o '[0-9]*' || echo 0)
  edges=$(grep -o 'cov: [0-9]*' "$scratch/$t.log" | tail -1 | grep -o '[0-9]*' || echo 0)
  # A floor that only an uninstrumented library misses (it left every target at 2-9 edges).
  if [ "$edges" -lt "${FUZZ_MIN_EDGES:-40}" ]; then
    echo "fuzz_$t: only $edges edges covered: is the library built with -fsanitize=fuzzer-no-link?"; exit 1
  fi
  total=$((total + execs))
  echo "fuzz_$t: replayed $n seeds ($seed_edges edges), $execs executions in ${secs}s" \
       "(dictionary: $(grep -c '^"' "tests/fuzz/$t.dict") tokens), $edges edges, no crash"
  summary+=("fuzz_$t: $execs execs, $edges edges")
done
printf '%s\n' "${summary[@]}"
echo "fuzz: $total executions, 0 crashes"
echo "fuzz: ${#targets[@]} passed, 0 failed"
