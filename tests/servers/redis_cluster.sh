#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# redis_cluster.sh — a Redis Cluster of 3 masters and 3 replicas on loopback, for the tests and the
# benchmark.  The one idea: a real cluster, started and stopped by whoever needs it, on ports that
# leave room for the cluster bus (port + 10000, also free and below 65536), with a short node
# timeout (1000 ms) so that a failover takes a second or two, not fifteen.
#   tests/servers/redis_cluster.sh start DIR   start it, wait until cluster_state:ok with all 16384
#        slots covered on every node; write DIR/url (redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...:
#        the masters as seeds), DIR/env (export KC_TEST_REDIS_CLUSTER_PORTS="P1 ... P6"), DIR/ports;
#        print the URL.  Exit 77 when redis-server or redis-cli is missing (tools/deps.sh installs them).
#   tests/servers/redis_cluster.sh stop DIR    stop every node it started (idempotent).
#   tests/servers/redis_cluster.sh kill-master DIR   once every node agrees on the slots, SIGKILL one
#        master that holds slots; return once a replica has been promoted and every surviving node
#        says cluster_state:ok with all slots covered; print the killed port.
# The nodes keep their data in memory only (no RDB, no AOF); cluster-require-full-coverage is off,
# so the other masters keep serving while one's slots fail over (as operators run it).
# Must not: leave a node running after stop, or kill a process it did not start (pids from its
# own pid files, checked to be redis-server).
set -euo pipefail
verb=${1:-}
dir=${2:-}
[ -n "$verb" ] && [ -n "$dir" ] || { sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
wait_s=${KC_CLUSTER_WAIT_S:-30}

# The TCP ports in use (listening or connected) on this machine, one per line.
ports_used() { ss -Htan 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}' | sort -u; }

# Six ports P with P and P+10000 free, from a random base in 20000..45000.
pick_ports() {
    local tries=0 base p ok used
    used=$(ports_used)
    while [ $tries -lt 50 ]; do
        tries=$((tries + 1))
        base=$((20000 + RANDOM % 25000))
        ok=1
        for p in $(seq "$base" $((base + 5))); do
            grep -qx -e "$p" -e $((p + 10000)) <<<"$used" && { ok=0; break; }
        done
        [ $ok = 1 ] && { seq "$base" $((base + 5)); return 0; }
    done
    echo "redis_cluster.sh: no six free ports (with their bus ports) found" >&2
    return 1
}

node_pid() { # the pid of the node on port $1 if it is a running redis-server, else nothing
    local f=$dir/node-$1/redis.pid pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q redis-server &&
        echo "$pid"
    return 0
}

info_ok() { # whether the node on port $1 says cluster_state:ok with every slot assigned and ok
    local out
    out=$(redis-cli -p "$1" --no-raw cluster info 2>/dev/null | tr -d '\r') || return 1
    grep -q '^cluster_state:ok' <<<"$out" && grep -q '^cluster_slots_ok:16384' <<<"$out"
}

all_ok() { # every port in $@ says ok
    local p
    for p in "$@"; do info_ok "$p" || return 1; done
}

start() {
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
        echo "redis_cluster.sh: redis-server or redis-cli not installed (tools/deps.sh installs redis-server)" >&2
        exit 77
    }
    mkdir -p "$dir"
    local ports p
    ports=$(pick_ports)
    for p in $ports; do
        mkdir -p "$dir/node-$p"
        cat >"$dir/node-$p/redis.conf" <<EOF
port $p
bind 127.0.0.1
daemonize yes
pidfile $dir/node-$p/redis.pid
logfile $dir/node-$p/redis.log
dir $dir/node-$p
save ""
appendonly no
cluster-enabled yes
cluster-config-file $dir/node-$p/nodes.conf
cluster-node-timeout 1000
cluster-replica-validity-factor 0
cluster-require-full-coverage no
EOF
        redis-server "$dir/node-$p/redis.conf" >/dev/null
    done
    echo "$ports" | tr '\n' ' ' | sed 's/ $//' >"$dir/ports"
    local t=0
    for p in $ports; do
        until redis-cli -p "$p" ping 2>/dev/null | grep -q PONG; do
            t=$((t + 1))
            [ $t -lt $((wait_s * 10)) ] || { echo "redis_cluster.sh: node $p did not start" >&2; stop; exit 1; }
            sleep 0.1
        done
    done
    local addrs=()
    for p in $ports; do addrs+=("127.0.0.1:$p"); done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
        cat "$dir/create.log" >&2
        stop
        exit 1
    }
    # shellcheck disable=SC2086
    until all_ok $ports; do
        t=$((t + 1))
        [ $t -lt $((wait_s * 10)) ] || { echo "redis_cluster.sh: the cluster did not become ok" >&2; stop; exit 1; }
        sleep 0.1
    done
    local masters url=""
    masters=$(redis-cli -p "${ports%% *}" cluster nodes | awk '$3 ~ /master/ && $9 != "" {split($2, a, "@"); print a[1]}')
    for p in $masters; do url="$url${url:+,}$p"; done
    url="redis+cluster://$url"
    echo "$url" >"$dir/url"
    echo "export KC_TEST_REDIS_CLUSTER_PORTS=\"$(cat "$dir/ports")\"" >"$dir/env"
    echo "$url"
}

stop() {
    [ -f "$dir/ports" ] || return 0
    local p pid left=()
    for p in $(cat "$dir/ports"); do
        pid=$(node_pid "$p")
        [ -n "$pid" ] || continue
        kill "$pid" 2>/dev/null || true
        left+=("$pid")
    done
    local t=0
    for pid in "${left[@]}"; do
        while [ -d "/proc/$pid" ] && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
        [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done
    return 0
}

kill_master() {
    [ -f "$dir/ports" ] || { echo "redis_cluster.sh: no cluster in $dir" >&2; exit 1; }
    local ports p any="" victim="" pid
    ports=$(cat "$dir/ports")
    for p in $ports; do [ -n "$(node_pid "$p")" ] && { any=$p; break; }; done
    [ -n "$any" ] || { echo "redis_cluster.sh: no node running in $dir" >&2; exit 1; }
    # every node agrees on the slots first: a replica promoted before it heard of a slot its master gave
    # away (a resharding a moment ago) would claim that slot back, without the keys that moved
    local t=0
    until redis-cli --cluster check "127.0.0.1:$any" 2>/dev/null | grep -q "All nodes agree about slots"; do
        t=$((t + 1))
        [ $t -lt $((wait_s * 10)) ] || { echo "redis_cluster.sh: the nodes do not agree on the slots" >&2; exit 1; }
        sleep 0.1
    done
    # a master with slots (field 9 on: its slot ranges), connected and not failed
    victim=$(redis-cli -p "$any" cluster nodes |
        awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" && $9 != "" {split($2, a, "[:@]"); print a[2]; exit}')
    [ -n "$victim" ] || { echo "redis_cluster.sh: no master with slots found" >&2; exit 1; }
    pid=$(node_pid "$victim")
    [ -n "$pid" ] || { echo "redis_cluster.sh: master $victim is not one this script started" >&2; exit 1; }
    kill -9 "$pid"
    while [ -d "/proc/$pid" ]; do sleep 0.05; done
    local alive=()
    t=0
    for p in $ports; do [ "$p" != "$victim" ] && [ -n "$(node_pid "$p")" ] && alive+=("$p"); done
    # ok again: every survivor says ok with all slots, and none names the killed port as a live master
    until all_ok "${alive[@]}" &&
        ! redis-cli -p "${alive[0]}" cluster nodes | grep -q ":$victim@.*master[^,]* .* connected"; do
        t=$((t + 1))
        [ $t -lt $((wait_s * 10)) ] || { echo "redis_cluster.sh: no replica took over from $victim" >&2; exit 1; }
        sleep 0.1
    done
    echo "$victim"
}

case "$verb" in
    start) start ;;
    stop) stop ;;
    kill-master) kill_master ;;
    *) echo "redis_cluster.sh: unknown verb '$verb' (start, stop, kill-master)" >&2; exit 2 ;;
esac
