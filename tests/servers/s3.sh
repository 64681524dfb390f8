#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# s3.sh — an S3-compatible server for tests and the benchmark: moto's server (PyPI moto[server], pinned
# in tools/deps.sh, in the git-ignored virtual environment .venv-s3 at the repository root).  It stands in
# for Amazon S3; its request authentication is on (INITIAL_NO_AUTH_ACTION_COUNT): after the set-up below
# (an IAM user, its access key and policy, the bucket) every request must carry a valid SigV4 signature
# of that key, so a wrong signature is refused as S3 refuses it.
#
#   tests/servers/s3.sh start DIR   start on a free loopback port; DIR/url: s3://kcache/prefix?endpoint=…&region=…,
#                                   DIR/env: export AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…
#   tests/servers/s3.sh stop DIR    stop it (idempotent)
# Exit status 77 when the virtual environment has no moto (tools/deps.sh installs it).
set -euo pipefail
verb=${1:-}
dir=${2:-}
[ -n "$verb" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${KCACHE_S3_PYTHON:-$root/.venv-s3/bin/python}

stop() {
  if [ -f "$dir/moto.pid" ]; then
    pid=$(cat "$dir/moto.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/moto.pid"
  fi
}

start() {
  "$py" -c 'import moto.server, boto3' 2>/dev/null || { echo "s3.sh: no moto[server] in $py (tools/deps.sh installs it)" >&2; exit 77; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # Four calls without authentication (the set-up below), then every request is checked.
  INITIAL_NO_AUTH_ACTION_COUNT=4 "$py" -m moto.server -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
  echo $! >"$dir/moto.pid"
  for _ in $(seq 200); do
    "$py" -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.05
  done
  "$py" - "$port" "$dir/env" <<'PY' || { echo "s3.sh: set-up failed:" >&2; cat "$dir/moto.log" >&2; stop; exit 1; }
import json, sys, boto3
port, env = sys.argv[1], sys.argv[2]
ep = "http://127.0.0.1:%s" % port
kw = dict(endpoint_url=ep, region_name="us-east-1", aws_access_key_id="AKIDSETUP", aws_secret_access_key="setup")
iam = boto3.client("iam", **kw)
iam.create_user(UserName="kcache")
key = iam.create_access_key(UserName="kcache")["AccessKey"]
iam.put_user_policy(UserName="kcache", PolicyName="s3", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
boto3.client("s3", **kw).create_bucket(Bucket="kcache")
with open(env, "w") as f:
    f.write("export AWS_ACCESS_KEY_ID=%s\nexport AWS_SECRET_ACCESS_KEY=%s\n" % (key["AccessKeyId"], key["SecretAccessKey"]))
PY
  echo "s3://kcache/fleet?endpoint=http://127.0.0.1:$port&region=us-east-1" >"$dir/url"
  cat "$dir/url"
}

case "$verb" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
