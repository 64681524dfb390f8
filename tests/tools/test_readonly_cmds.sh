#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_readonly_cmds.sh — the commands that only look at a cache change nothing in its directory:
# each one runs against a cache holding compiled graphs and filler entries, and the tree (every
# name, type, size, mode and mtime) is the same after it as before.  A directory that does not
# exist stays so (its parents too), the command saying so on stderr; KCACHE_DISABLE changes
# lookups, not what stats, ls and show report.  The commands that write (stats --zero, verify
# --repair, config KEY VALUE) are run last, and must change the tree: the snapshot sees changes.
#   test_readonly_cmds.sh PATH/TO/kcache PATH/TO/kc_fill
set -u
KC=$1
FILL=$2
T=$(mktemp -d /tmp/kctest-ro-XXXXXX)
trap 'rm -rf "$T"' EXIT
export KCACHE_DIR= KCACHE_DISABLE= KCACHE_READONLY= KCACHE_LOG= KCACHE_ALLOW_UNSAFE_DIR= KCACHE_REMOTE=
fails=0; checks=0
ok()   { checks=$((checks+1)); }
bad()  { checks=$((checks+1)); fails=$((fails+1)); echo "FAIL: $*" >&2; }
expect_rc() { # expect_rc WANT CMD...
  local want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "exit $rc (want $want): $* ; stderr: $(head -c 300 "$T/err")"; fi
}
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
expect_json() { if json "$T/out" "$1"; then ok; else bad "json check failed: $1 ; got: $(head -c 400 "$T/out")"; fi; }
# The tree under $1 (and $1 itself): name, type, size, mode, owner and mtime (ns) of every file and folder.
snap() { find "$1" -printf '%P %y %s %m %U %T@\n' 2>/dev/null | LC_ALL=C sort; }

D=$T/cache
S=$T/spec; mkdir -p "$S"
printf 'extern "C" __global__ void ka(float *x, int n) { if ((int)threadIdx.x < n) x[threadIdx.x] += 1.f; }\n' >"$S/a.cu"
cat >"$S/one.json" <<'EOF2'
{"name": "one", "kernels": [{"id": "a", "file": "a.cu", "entry": "ka"}],
 "inputs": [{"dtype": "f32", "sizes": [64]}], "outputs": [{"dtype": "f32", "sizes": [64]}],
 "forward": [{"kernel": "a", "grid": [1, 1, 1], "block": [64, 1, 1], "args": ["output:0", "i32:64"]}]}
EOF2
sed 's/64/128/g' "$S/one.json" >"$S/one128.json"   # never compiled: explain and coverage miss it
printf '{"graphs": ["one.json", "one128.json"], "archs": ["sm_90"]}\n' >"$S/manifest.json"
printf '{"graphs": ["one.json"], "archs": ["sm_90"]}\n' >"$S/stored.json"

expect_rc 0 "$KC" --cache-dir "$D" get "$S/one.json" --arch sm_90 --json
KEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$T/out")
"$FILL" "$D" 20 500 >/dev/null || bad "kc_fill"
# A stats file with counts in it, a corrupt entry (verify finds it; only --repair may move it).
expect_rc 0 "$KC" --cache-dir "$D" get "$S/one.json" --arch sm_90
F=$(ls "$D"/v1/*/*.sm_90.kce | grep -v "$KEY" | head -1)
printf 'garbage' | dd of="$F" bs=1 seek=200 conv=notrunc 2>/dev/null
touch -d '2020-01-01' $(find "$D" -name '*.kce')   # old enough that a hit would refresh the LRU time
sleep 1.1                                          # a change within the same second would still show (ns)

# Each command that only reads, with the exit it has on this cache (verify: a corrupt entry, 1;
# coverage: one128 missing, 1).  Every line is one command.
cmds=(
  "0 stats"
  "0 stats --json"
  "0 ls"
  "0 ls --images --json"
  "0 show $KEY"
  "0 show $S/one.json --arch sm_90 --json"
  "0 show $S/one.json --arch sm_90 --extract $T/extracted"
  "1 verify"
  "1 verify --json --signatures"
  "0 explain $S/one.json --arch sm_90"
  "0 explain $S/one128.json --arch sm_90 --json"
  "1 coverage $S/manifest.json"
  "0 coverage $S/stored.json --json"
  "0 config"
  "0 config max_size"
  "0 config --json"
  "0 toolchain"
  "0 toolchain --json"
  "0 limit"
  "0 export $T/all.kcb"
  "0 export $T/some.kcb --manifest $S/stored.json"
  "0 import $T/all.kcb --dry-run"
)
before=$(snap "$D")
for line in "${cmds[@]}"; do
  want=${line%% *}; args=${line#* }
  # shellcheck disable=SC2086
  expect_rc "$want" "$KC" --cache-dir "$D" $args
  after=$(snap "$D")
  if [ "$before" = "$after" ]; then ok; else
    bad "'kcache $args' changed the cache directory: $(diff <(echo "$before") <(echo "$after") | head -5)"
    before=$after
  fi
done

# KCACHE_DISABLE changes lookups, not what the directory is said to hold.
expect_rc 0 "$KC" --cache-dir "$D" stats --json
ENTRIES=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["entries"])' "$T/out")
[ "$ENTRIES" -ge 21 ] && ok || bad "stats counted $ENTRIES entries, not the 21 or more stored"
expect_json 'j["mode"] == "read-write"'   # the mode lookups find here, not the inspection's own
KCACHE_DISABLE=1 expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json "j['entries'] == $ENTRIES and j['mode'] == 'disabled'"
KCACHE_READONLY=1 expect_rc 0 "$KC" --cache-dir "$D" stats --json
expect_json "j['entries'] == $ENTRIES and j['mode'] == 'read-only'"
KCACHE_DISABLE=1 expect_rc 0 "$KC" --cache-dir "$D" ls --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if len(j.get("entries", j) if isinstance(j, dict) else j) >= 21 else 1)' "$T/out" \
  && ok || bad "KCACHE_DISABLE=1 ls lists fewer than 21 entries: $(head -c 300 "$T/out")"
KCACHE_DISABLE=1 expect_rc 0 "$KC" --cache-dir "$D" show "$KEY"
KCACHE_DISABLE=1 expect_rc 0 "$KC" --cache-dir "$D" explain "$S/one.json" --arch sm_90 --json
expect_json 'j["hit"] == False'   # a lookup still misses, as it would in a process with KCACHE_DISABLE
[ "$before" = "$(snap "$D")" ] && ok || bad "a KCACHE_DISABLE command changed the directory"

# A directory that does not exist: nothing is made, parents included; said on stderr, exit as for an empty cache.
N=$T/nonexistent/x
for line in "0 stats" "0 stats --json" "0 ls" "0 ls --json" "0 verify" "0 config" "0 toolchain" "0 limit" \
            "1 coverage $S/stored.json" "0 explain $S/one.json --arch sm_90" "1 show $KEY"; do
  want=${line%% *}; args=${line#* }
  # shellcheck disable=SC2086
  expect_rc "$want" "$KC" --cache-dir "$N" $args
  [ -e "$T/nonexistent" ] && { bad "'kcache $args' made $T/nonexistent"; rm -rf "$T/nonexistent"; } || ok
  grep -q "does not exist" "$T/err" && ok || bad "'kcache $args' did not say the directory does not exist: $(head -c 200 "$T/err")"
done
expect_rc 0 "$KC" --cache-dir "$N" stats --json
expect_json 'j["entries"] == 0 and j["hits"] == 0 and j["misses"] == 0'

# The toolkit memo and the direct manifests (v1/toolkits/) are written by caches that write only: a
# reader reads them when there, and without them walks the toolkit's tree, creating nothing.  adamw
# asks for the toolkit's headers; its sm_90 entry is stored, then v1/toolkits/ removed.
KD=$(cd "$(dirname "$0")/../../kernels" && pwd)
D2=$T/tk
expect_rc 0 "$KC" --cache-dir "$D2" get "$KD/adamw.json" --arch sm_90
[ -n "$(ls "$D2/v1/toolkits" 2>/dev/null)" ] && ok || bad "a compile of adamw wrote no toolkit memo (the case tests nothing)"
rm -rf "$D2/v1/toolkits"
before=$(snap "$D2")
for line in "0 - explain $KD/adamw.json --arch sm_90" "0 - show $KD/adamw.json --arch sm_90" \
            "0 1 get $KD/adamw.json --arch sm_90" "0 1 get $KD/adamw.json --arch sm_89" \
            "1 1 prewarm $KD/manifest.json --arch sm_87"; do
  read -r want ro args <<<"$line"
  # shellcheck disable=SC2086
  if [ "$ro" = 1 ]; then KCACHE_READONLY=1 expect_rc "$want" "$KC" --cache-dir "$D2" $args
  else expect_rc "$want" "$KC" --cache-dir "$D2" $args; fi
  after=$(snap "$D2")
  if [ "$before" = "$after" ]; then ok; else
    bad "'kcache $args' (KCACHE_READONLY=${ro/-/}) changed the cache directory: $(diff <(echo "$before") <(echo "$after") | head -5)"
    before=$after
  fi
done
[ -e "$D2/v1/toolkits" ] && bad "a read-only command made v1/toolkits" || ok

# The commands that write do change the tree (the snapshot is not blind).
for args in "stats --zero" "verify --repair" "config max_size 1G"; do
  before=$(snap "$D")
  # shellcheck disable=SC2086
  "$KC" --cache-dir "$D" $args >/dev/null 2>&1
  [ "$before" != "$(snap "$D")" ] && ok || bad "'kcache $args' changed nothing: the snapshot sees no writes"
done
[ -n "$(ls "$D/v1/quarantine")" ] && ok || bad "verify --repair quarantined nothing"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
