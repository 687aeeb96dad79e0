#!/usr/bin/env bash
# scripts/s3-server.sh — an S3-compatible server on loopback for the tests
# and examples: s3rver (tools/s3rver, installed from the npm registry by
# scripts/install-deps.sh), its objects under DIR/data.
#
#   scripts/s3-server.sh start DIR [--tls] [--address A]
#                                            prints endpoint=… access_key=…
#                                            secret_key=… bucket=… (and
#                                            ca_file=… with --tls) and writes
#                                            them as AWS variables to DIR/env;
#                                            listens on A (127.0.0.1)
#   scripts/s3-server.sh stop DIR
#
# The server ends by itself after RT_S3_SERVER_TTL seconds (1800) if nobody
# stops it.  tools/s3rver/server.js adds what s3rver lacks and S3 does: each
# request's Signature Version 4 verified, session tokens (S3_TEST_TOKEN valid,
# S3_TEST_EXPIRED_TOKEN expired, in the environment) and
# AbortMultipartUpload.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/tools/s3rver/node_modules/.bin/s3rver
server=$here/tools/s3rver/server.js
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,18p' "$0" >&2; exit 2; }

case "$cmd" in
start)
  tls=0 addr=127.0.0.1
  shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --tls) tls=1 ;;
      --address) addr=$2; shift ;;
      *) echo "s3-server: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
  done
  if [ ! -x "$bin" ] || ! command -v node > /dev/null; then
    echo "s3-server: no s3rver at $bin (run scripts/install-deps.sh)" >&2
    exit 3
  fi
  mkdir -p "$dir/data"
  rm -f "$dir/pid"
  : > "$dir/log" # now: the server's shell opens it only once it runs, and sed reads it at once
  args=(--address "$addr")
  scheme=http
  if [ $tls = 1 ]; then # a CA of its own and a certificate for 127.0.0.1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ringtrain-s3-test-ca \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" 2> /dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$addr" -keyout "$dir/server.key" \
      -out "$dir/server.csr" 2> /dev/null
    printf 'subjectAltName=IP:%s\n' "$addr" > "$dir/san.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 2 -extfile "$dir/san.ext" -out "$dir/server.pem" 2> /dev/null
    args+=(--key "$dir/server.key" --cert "$dir/server.pem")
    scheme=https
  fi
  # s3rver makes its continuation tokens with DES: OpenSSL 3 keeps it in the legacy provider
  setsid timeout "${RT_S3_SERVER_TTL:-1800}" node --openssl-legacy-provider "$server" "$dir" ${args[@]+"${args[@]}"} \
    > "$dir/log" 2>&1 < /dev/null &
  echo $! > "$dir/pid"
  port=""
  for _ in $(seq 1 200); do # 20 s at most
    port=$(sed -n "s/.*listening on $addr:\([0-9][0-9]*\).*/\1/p" "$dir/log" | head -1 || true)
    [ -n "$port" ] && break
    kill -0 "$(cat "$dir/pid")" 2> /dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "s3-server: s3rver did not start:" >&2
    cat "$dir/log" >&2
    exit 1
  fi
  out="endpoint=$scheme://$addr:$port access_key=S3RVER secret_key=S3RVER bucket=ringtrain"
  [ $tls = 1 ] && out="$out ca_file=$dir/ca.pem"
  echo "$out"
  {
    echo "export AWS_ENDPOINT_URL=$scheme://$addr:$port"
    echo "export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1"
    [ $tls = 1 ] && echo "export AWS_CA_BUNDLE=$dir/ca.pem"
    echo "RT_S3_BUCKET=ringtrain"
  } > "$dir/env"
  ;;
stop)
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    kill -- "-$pid" 2> /dev/null || kill "$pid" 2> /dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    rm -f "$dir/pid"
  fi
  ;;
*)
  sed -n '2,18p' "$0" >&2
  exit 2
  ;;
esac
