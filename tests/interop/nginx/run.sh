#!/usr/bin/env bash
# nginx in front of two TokenWire instances (tags a and b), with the config
# generated from docs/nginx.conf: its ports replaced by free ones, and its
# pid, logs and temp files put in a temp dir, so it runs as the current user
# beside anything else. Then:
#   proxy_checks.mjs: balancing of new streams, GET/DELETE routed by the tag
#     in the id, SSE with heartbeats arriving through the proxy;
#   page_scenarios.mjs: the page loaded through nginx, SSE and WebSocket
#     streams dropped and resumed through it — each resume must land on the
#     instance that owns the stream (its metrics and emission log say so);
#     and a Cancel (DELETE) through it.
# NGINX_TEMPLATE=FILE tries another config (same ports as docs/nginx.conf).
# Prints PASS/FAIL lines; exit 1 on any FAIL.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tests/interop/lib.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

TTFT_MS=600 HEARTBEAT_MS=100
FLAGS=(--backend mock --lab --mock-ttft-ms $TTFT_MS --mock-tokens-per-s 50 --heartbeat-ms $HEARTBEAT_MS --linger-ms 5000)
tw_start a "${FLAGS[@]}" --instance-tag a; PORT_A=$TW_PORT
tw_start b "${FLAGS[@]}" --instance-tag b; PORT_B=$TW_PORT
PORT_N=$(free_port)

# The template's fixed ports (8080 nginx, 8081 a, 8082 b) become ours; the
# files nginx writes go under $WORK/nginx.
mkdir -p "$WORK/nginx"
{
  echo "pid $WORK/nginx/nginx.pid;"
  echo "error_log $WORK/nginx/error.log notice;"
  echo "daemon off;"
  sed -e "s/listen 127\.0\.0\.1:8080;/listen 127.0.0.1:$PORT_N;/" \
      -e "s/127\.0\.0\.1:8081;/127.0.0.1:$PORT_A;/" \
      -e "s/127\.0\.0\.1:8082;/127.0.0.1:$PORT_B;/" \
      -e "s|^http {|http {\n    client_body_temp_path $WORK/nginx/body;\n    proxy_temp_path $WORK/nginx/proxy;\n    fastcgi_temp_path $WORK/nginx/fastcgi;\n    uwsgi_temp_path $WORK/nginx/uwsgi;\n    scgi_temp_path $WORK/nginx/scgi;|" \
      "${NGINX_TEMPLATE:-docs/nginx.conf}"
} >"$WORK/nginx/nginx.conf"
grep -q "127.0.0.1:$PORT_N;" "$WORK/nginx/nginx.conf" || { echo "FAIL nginx: the template's listen line changed"; exit 1; }
"$NGINX" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" &
TW_PIDS+=($!)
PROXY="http://127.0.0.1:$PORT_N"
wait_http "$PROXY/healthz" || { cat "$WORK/nginx/error.log"; exit 1; }
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*\///') on :$PORT_N in front of a (:$PORT_A) and b (:$PORT_B)"

status=0
INSTANCES="a=http://127.0.0.1:$PORT_A,b=http://127.0.0.1:$PORT_B"
node tests/interop/nginx/proxy_checks.mjs --proxy "$PROXY" --instances "$INSTANCES" \
  --ttft-ms $TTFT_MS --heartbeat-ms $HEARTBEAT_MS || status=1
node tests/interop/browser/page_scenarios.mjs --base "$PROXY" --instances "$INSTANCES" --label "nginx page" \
  'transport=sse&max_tokens=40&drop_after=5,20,30' \
  'transport=sse&slow=1&slow_ms=50&max_tokens=40&drop_after=5,20,30' \
  'transport=ws&max_tokens=40&drop_after=5,20,30' \
  'transport=ws&max_tokens=40&drop_after=3,8,13,18,23,28,33' \
  'transport=sse&max_tokens=200&drop_after=5&cancel_after=12' || status=1
if [ $status -ne 0 ]; then echo "--- nginx error log"; tail -n 20 "$WORK/nginx/error.log"; fi
exit $status
