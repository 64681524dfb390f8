#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# redis.sh — a plain redis-server on a free loopback port, for tests and the benchmark's fleet mode.
#
#   tests/servers/redis.sh start DIR   start it (no persistence, loopback only), wait until it answers PING,
#                                      write DIR/url (the URL kcache uses) and DIR/env (nothing to export),
#                                      print the URL; exit 77 when redis-server is not installed
#   tests/servers/redis.sh stop DIR    stop what `start DIR` started (idempotent)
#
# The one idea: the same interface as every script in this folder (start DIR / stop DIR, DIR/url, DIR/env), so the
# fleet benchmark and tests run any server by name.  It must not: touch anything outside DIR, stop a process it did
# not start (it stops only the pid it wrote in DIR/redis.pid, and only while that pid is still a redis-server), or
# wait without a bound.
set -u

die() { echo "redis.sh: $*" >&2; exit 1; }

# A loopback port nobody listens on now (python3 binds port 0; the kernel picks).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

ping_ok() { # PORT: 0 when the server answers PONG
    [ "$(redis-cli -h 127.0.0.1 -p "$1" --no-raw PING 2>/dev/null)" = "PONG" ]
}

stop() {
    local dir=$1 pid
    [ -f "$dir/redis.pid" ] || return 0
    pid=$(cat "$dir/redis.pid")
    # only our own server: the pid must still be a redis-server (a reused pid is left alone)
    if [ -n "$pid" ] && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$dir/redis.pid"
    return 0
}

start() {
    local dir=$1 port pid
    command -v redis-server >/dev/null 2>&1 || { echo "redis.sh: redis-server is not installed (apt-get install redis-server)" >&2; exit 77; }
    command -v redis-cli >/dev/null 2>&1 || { echo "redis.sh: redis-cli is not installed (apt-get install redis-tools)" >&2; exit 77; }
    mkdir -p "$dir" || die "cannot create $dir"
    stop "$dir"
    for _ in 1 2 3 4 5; do # a port taken between the pick and the bind: another port
        port=$(free_port) || die "no free port"
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --protected-mode yes \
            --dir "$dir" --logfile "$dir/redis.log" --daemonize no >/dev/null 2>&1 &
        pid=$!
        echo "$pid" >"$dir/redis.pid"
        for _ in $(seq 1 200); do # up to 10 s
            if ping_ok "$port"; then
                echo "redis://127.0.0.1:$port/0" >"$dir/url"
                : >"$dir/env"
                echo "$port" >"$dir/port"
                cat "$dir/url"
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break # it exited: the port was taken
            sleep 0.05
        done
        stop "$dir"
    done
    die "redis-server did not start (see $dir/redis.log)"
}

case "${1:-}" in
start) [ $# -eq 2 ] || die "usage: redis.sh start DIR"; start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: redis.sh stop DIR"; stop "$2" ;;
*) die "usage: redis.sh start DIR | stop DIR" ;;
esac
