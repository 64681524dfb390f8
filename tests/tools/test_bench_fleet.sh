#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_bench_fleet.sh BENCH — kcache-bench --fleet, small: 4 hosts x 2 graphs against a plain redis-server
# (tests/servers/redis.sh, started and stopped by the benchmark itself): cold with the lease, the same manifest again
# from the warm remote, and cold without the lease.  Checks that
# what the mode prints is consistent with what the hosts' own stats counted, not how fast it was: every run
# measured; one outcome per lookup in the hosts' stats; the NVRTC compiles the lookups reported equal the compiles
# in the hosts' stats, and every key compiled at least once (the manifest is cold); 0 failed lookups and 0 wrong
# kernels, and every host ended with the same bytes for the same key; with a lease in this build, exactly one compile per key under it.  The server is gone afterwards.
# Skipped (77) without redis-server or NVRTC.
set -u
BENCH=${1:?usage: test_bench_fleet.sh KCACHE_BENCH}
command -v redis-server >/dev/null 2>&1 || { echo "SKIP: redis-server is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
T=$(mktemp -d)
# a redis-server runs in its --dir, under $T: whatever of the run is left (the benchmark killed) is stopped
servers_left() {
    for p in $(pgrep -x redis-server); do
        case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$T"*) echo "$p" ;; esac
    done
}
cleanup() {
    for p in $(servers_left); do kill "$p"; done
    rm -rf "$T"
}
trap cleanup EXIT
export TMPDIR=$T

"$BENCH" --fleet --hosts 4 --fleet-graphs 2 --servers redis --json "$T/fleet.json" >"$T/out" 2>&1
rc=$?
cat "$T/out"
if grep -q "NVRTC, which could not be loaded\|no NVRTC" "$T/out"; then echo "SKIP: no NVRTC"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: kcache-bench --fleet exited $rc"; exit 1; }
grep -q '^redis, ' "$T/out" || { echo "FAIL: no redis run in the table"; exit 1; }
# the benchmark's scratch folder (the server's folder in it) is removed, and no redis-server of it is left
leftover=$(find "$T" -maxdepth 1 -name 'kcache-bench-*' | head -1)
[ -z "$leftover" ] || { echo "FAIL: scratch folder left: $leftover"; exit 1; }
left=$(servers_left)
[ -z "$left" ] || { echo "FAIL: redis-server $left of the run is still running"; exit 1; }

python3 - "$T/fleet.json" <<'EOF' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))["fleet"]
runs = d["runs"]
bad = []
def check(cond, what):
    if not cond: bad.append(what)
check(d["hosts"] == 4 and d["graphs"] == 2, "hosts/graphs as asked")
check(len(runs) >= 1, "at least one run")
lease_build = any(r.get("lease_ms", -1) >= 0 for r in runs)
check(len(runs) == (3 if lease_build else 2), "runs: cold with the lease, warm, cold without (no lease setting: cold, warm)")
check([r["warm"] for r in runs].count(True) == 1, "one warm run")
for r in runs:
    l = r["label"]
    check(r["measured"], l + ": measured")
    if not r["measured"]: continue
    check(r["lookups"] == 8, l + ": 8 lookups")
    check(r["lookups_in_stats"] == r["lookups"], l + ": one outcome per lookup in the hosts' stats")
    check(r["nvrtc_compiles"] == r["nvrtc_compiles_in_stats"], l + ": NVRTC compiles said == the hosts' stats")
    if r["warm"]:
        check(r["nvrtc_compiles_per_key"]["max"] == 0, l + ": nothing compiled from a warm remote")
        check(r["remote_hits"] == r["lookups"], l + ": every lookup a remote hit")
    else:
        check(r["nvrtc_compiles_per_key"]["min"] >= 1, l + ": every cold key compiled at least once")
    check(r["compiled"] + r["remote_hits"] + r["disk_hits"] == r["lookups"], l + ": outcomes add up")
    check(r["failed"] == 0, l + ": 0 failed lookups")
    check(r["wrong"] == 0, l + ": 0 wrong kernels")
    check(r["unverified"] == 0, l + ": every lookup's bytes checked")
    check(r["distinct_images_per_key_max"] == 1, l + ": one key, the same bytes on every host")
    check(r["bytes_held"] > 0 and (r["warm"] or r["remote_writes"] >= 1), l + ": bytes landed and the remote was written")
    if r["leases"] and r["lease_ms"] > 0 and not r["warm"]:
        check(r["nvrtc_compiles_per_key"]["max"] == 1, l + ": one NVRTC compile per key under the lease")
        check(r["remote_hits"] == r["lookups"] - 2, l + ": every other lookup a remote hit")
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
EOF
echo "PASS"
