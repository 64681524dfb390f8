#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# redis_tls.sh — redis-server over TLS with an ACL user, on free loopback ports, for tests and the benchmark.
#
#   tests/servers/redis_tls.sh start DIR   make a test CA and certificates in DIR (openssl), start three TLS-only
#                                          servers (--port 0 --tls-port P, tls-auth-clients optional, the ACL user
#                                          "kc" and the default user off), wait until each answers PING, write
#                                          DIR/url (the URL kcache uses), DIR/env (nothing to export) and print it;
#                                          exit 77 when redis-server, redis-cli or openssl is not installed
#   tests/servers/redis_tls.sh stop DIR    stop what `start DIR` started (idempotent)
#
# What DIR holds after start:
#   ca.pem             the CA every good certificate is signed by;  other-ca.pem: a CA that signed nothing here
#   server.pem/.key    CN localhost, SAN DNS:localhost and IP:127.0.0.1 (the main server, DIR/url, DIR/port)
#   expired.pem/.key   the same names, expired yesterday (DIR/url_expired, DIR/port_expired)
#   wronghost.pem/.key SAN DNS:wrong.example only (DIR/url_wronghost, DIR/port_wronghost)
#   client.pem/.key    a client certificate signed by ca.pem (the servers ask for one but do not require it)
#   password           the user kc's password (mode 600);  password_open: the same, mode 644 (to be refused)
# The URLs are rediss://kc@127.0.0.1:PORT/0?ca_file=DIR/ca.pem&password_file=DIR/password.
#
# The one idea: the same interface as every script in this folder (start DIR / stop DIR, DIR/url, DIR/env).  It must
# not: touch anything outside DIR, stop a process it did not start (only the pids in DIR/*.pid, and only while each
# is still a redis-server), or wait without a bound.
set -u

die() { echo "redis_tls.sh: $*" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

ping_ok() { # DIR PORT: 0 when the server answers PONG over TLS as the user kc
    [ "$(REDISCLI_AUTH="$(cat "$1/password")" redis-cli --tls --cacert "$1/ca.pem" --sni localhost \
        -h 127.0.0.1 -p "$2" --user kc --no-auth-warning --no-raw PING 2>/dev/null)" = "PONG" ]
}

stop_one() { # PIDFILE
    local pid
    [ -f "$1" ] || return 0
    pid=$(cat "$1")
    if [ -n "$pid" ] && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$1"
}

stop() {
    local name
    for name in main expired wronghost; do stop_one "$1/$name.pid"; done
    return 0
}

# CN NAME SAN DAYS [CLIENT]: NAME.key and NAME.pem signed by ca.pem
cert() {
    local dir=$1 name=$2 san=$3 days=$4 ext
    ext="$dir/$name.ext"
    { echo "subjectAltName=$san"; [ "${5:-}" = client ] && echo "extendedKeyUsage=clientAuth"; } >"$ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/$name.key" \
        -out "$dir/$name.csr" -subj "/CN=${name}" >/dev/null 2>&1 || return 1
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -days "$days" -extfile "$ext" -out "$dir/$name.pem" >/dev/null 2>&1
}

make_certs() {
    local dir=$1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -subj "/CN=kcache test CA" -days 2 >/dev/null 2>&1 || return 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/other-ca.key" \
        -out "$dir/other-ca.pem" -subj "/CN=another CA" -days 2 >/dev/null 2>&1 || return 1
    cert "$dir" server "DNS:localhost,IP:127.0.0.1" 2 &&
        cert "$dir" expired "DNS:localhost,IP:127.0.0.1" -1 &&
        cert "$dir" wronghost "DNS:wrong.example" 2 &&
        cert "$dir" client "DNS:client" 2 client || return 1
    chmod 600 "$dir"/*.key
    (umask 077 && python3 -c 'import secrets; print("kc-" + secrets.token_hex(12))' >"$dir/password") || return 1
    cp "$dir/password" "$dir/password_open" && chmod 644 "$dir/password_open"
}

start_one() { # DIR NAME CERT: starts, prints the port
    local dir=$1 name=$2 crt=$3 port pid
    for _ in 1 2 3 4 5; do
        port=$(free_port) || die "no free port"
        redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save "" --appendonly no \
            --tls-cert-file "$dir/$crt.pem" --tls-key-file "$dir/$crt.key" --tls-ca-cert-file "$dir/ca.pem" \
            --tls-auth-clients optional --user default off --user kc on ">$(cat "$dir/password")" '~*' '&*' '+@all' \
            --dir "$dir" --logfile "$dir/$name.log" --daemonize no >/dev/null 2>&1 &
        pid=$!
        echo "$pid" >"$dir/$name.pid"
        for _ in $(seq 1 200); do # up to 10 s
            # the expired and wrong-host servers fail verification: their PING goes without it
            if [ "$crt" = server ] && ping_ok "$dir" "$port"; then echo "$port"; return 0; fi
            if [ "$crt" != server ] && [ "$(REDISCLI_AUTH="$(cat "$dir/password")" redis-cli --tls --insecure \
                -h 127.0.0.1 -p "$port" --user kc --no-auth-warning --no-raw PING 2>/dev/null)" = PONG ]; then
                echo "$port"
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break # it exited: the port was taken
            sleep 0.05
        done
        stop_one "$dir/$name.pid"
    done
    return 1
}

start() {
    local dir=$1 port name crt q
    for b in redis-server redis-cli openssl python3; do
        command -v "$b" >/dev/null 2>&1 || { echo "redis_tls.sh: $b is not installed (apt-get install redis-server redis-tools openssl)" >&2; exit 77; }
    done
    mkdir -p "$dir" || die "cannot create $dir"
    dir=$(cd "$dir" && pwd)
    stop "$dir"
    make_certs "$dir" || die "openssl could not make the test certificates in $dir"
    q="ca_file=$dir/ca.pem&password_file=$dir/password"
    for name in main expired wronghost; do
        crt=$name
        [ "$name" = main ] && crt=server
        port=$(start_one "$dir" "$name" "$crt") || { stop "$dir"; die "redis-server (TLS, $name) did not start (see $dir/$name.log)"; }
        if [ "$name" = main ]; then
            echo "rediss://kc@127.0.0.1:$port/0?$q" >"$dir/url"
            echo "$port" >"$dir/port"
        else
            echo "rediss://kc@127.0.0.1:$port/0?$q" >"$dir/url_$name"
            echo "$port" >"$dir/port_$name"
        fi
    done
    : >"$dir/env"
    cat "$dir/url"
}

case "${1:-}" in
start) [ $# -eq 2 ] || die "usage: redis_tls.sh start DIR"; start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: redis_tls.sh stop DIR"; stop "$2" ;;
*) die "usage: redis_tls.sh start DIR | stop DIR" ;;
esac
