#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nginx_dav.sh — nginx (Debian's, with its WebDAV module) as an HTTP content store for tests and the
# benchmark: a foreground process with its own configuration in DIR, PUT and DELETE allowed,
# create_full_put_path on (a PUT makes the folders under it), on a free loopback port.
#
#   tests/servers/nginx_dav.sh start DIR     start; writes DIR/url (http://127.0.0.1:PORT/kcache) and DIR/env
#   tests/servers/nginx_dav.sh stop DIR      stop it (idempotent)
#   tests/servers/nginx_dav.sh restart DIR   stop and start again on the same port, keeping the data
# Exit status 77 when nginx is not installed (tools/deps.sh installs it).
set -euo pipefail
verb=${1:-}
dir=${2:-}
[ -n "$verb" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|restart DIR" >&2; exit 2; }
nginx=$(command -v nginx || echo /usr/sbin/nginx)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stop() {
  if [ -f "$dir/nginx.pid" ]; then
    pid=$(cat "$dir/nginx.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/nginx.pid"
  fi
}

start() {
  [ -x "$nginx" ] || { echo "nginx_dav.sh: nginx is not installed (apt-get install nginx-light; tools/deps.sh)" >&2; exit 77; }
  mkdir -p "$dir/data/kcache" "$dir/tmp"
  dir=$(cd "$dir" && pwd)
  port=$(cat "$dir/port" 2>/dev/null || free_port)
  echo "$port" >"$dir/port"
  cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 256; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  client_max_body_size 256m;
  server {
    listen 127.0.0.1:$port;
    root $dir/data;
    location /kcache/ {
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
  }
}
CONF
  "$nginx" -p "$dir" -c "$dir/nginx.conf" >"$dir/nginx.out" 2>&1 &
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
      echo "http://127.0.0.1:$port/kcache" >"$dir/url"
      : >"$dir/env"
      cat "$dir/url"
      return 0
    fi
    sleep 0.05
  done
  echo "nginx_dav.sh: nginx did not start on port $port:" >&2
  cat "$dir/nginx.out" "$dir/error.log" >&2 2>/dev/null || true
  stop
  exit 1
}

case "$verb" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "usage: $0 start|stop|restart DIR" >&2; exit 2 ;;
esac
