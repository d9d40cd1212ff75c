#!/usr/bin/env bash
# HTTP keep-alive micro-benchmark: TokenWire's Server vs nginx, GET /healthz.
#
# Both serve 200 {"status":"ok"} on loopback; nginx runs one worker with
# `return 200` from a config written into a temp dir (its own pid file, no
# daemon, no root needed). wrk drives both with the same settings, alternating
# TokenWire / nginx, REPS times; the row reports medians.
#
#   bash bench/http/run.sh [--out DIR]      (DURATION=10 REPS=3 THREADS=1 CONNS=50)
# Needs: wrk, nginx (apt-get install -y wrk nginx); a missing one is named.
# Output: DIR/http-<UTC date>.json (raw runs; no target is set, so its
# verdict says so) and a markdown row, where DIR is --out, else $BENCH_OUT,
# else a new bench/runs/<date>/ (bench/lib/common.sh; never bench/results/).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh
OUT_FLAG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) echo "usage: $0 [--out DIR]" >&2; exit 2 ;;
  esac
done

DURATION=${DURATION:-10}
REPS=${REPS:-3}
THREADS=${THREADS:-1}
CONNS=${CONNS:-50}
BIN=build/bench/http_server_bench

MISSING=""
for tool in wrk nginx; do
  command -v "$tool" >/dev/null || MISSING="$MISSING $tool"
done
[ -z "$MISSING" ] || { echo "missing:$MISSING (apt-get install -y$MISSING)" >&2; exit 1; }
RUN_DIR=$(bench_run_dir "$OUT_FLAG")
# The top-level Makefile includes bench/*/bench.mk; older checkouts need -f.
if grep -q 'bench/\*/bench.mk' Makefile; then
  make -s -j2 "$BIN" build/bench/render
else
  make -s -j2 -f Makefile -f bench/http/bench.mk "$BIN"
fi

TMP=$(mktemp -d)
TW_PID=""
NGINX_PID=""
cleanup() {
  [ -n "$TW_PID" ] && kill "$TW_PID" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# --- TokenWire bench server on an ephemeral port -----------------------------
"$BIN" --host 127.0.0.1 --port 0 >"$TMP/tw.out" 2>&1 &
TW_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$TMP/tw.out" && break; sleep 0.05; done
TW_PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$TMP/tw.out")
[ -n "$TW_PORT" ] || { echo "bench server did not start:"; cat "$TMP/tw.out"; exit 1; } >&2

# --- nginx: pick a free port (connect must fail), one worker ----------------
NGINX_PORT=""
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 40000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then NGINX_PORT=$p; break; fi
done
[ -n "$NGINX_PORT" ] || { echo "no free port for nginx" >&2; exit 1; }
mkdir -p "$TMP/nginx/logs"
cat >"$TMP/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process on;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
  }
}
CONF
nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/logs/error.log" &
NGINX_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$NGINX_PORT") 2>/dev/null && break; sleep 0.05; done

# Sanity: both answer the same body.
for port in "$TW_PORT" "$NGINX_PORT"; do
  body=$(exec 3<>"/dev/tcp/127.0.0.1/$port"; printf 'GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n' >&3; cat <&3 | tail -c 15)
  [ "$body" = '{"status":"ok"}' ] || { echo "port $port answered: $body" >&2; exit 1; }
done

# wrk output → "rps p99_ms"
parse() {
  awk '
    /Requests\/sec:/ { rps = $2 }
    /^ +99%/ { v = $2; unit = v; sub(/[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v);
               if (unit == "us") v /= 1000; else if (unit == "s") v *= 1000; p99 = v }
    END { printf "%s %s\n", rps, p99 }' "$1"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RUNS_JSON=""
for rep in $(seq "$REPS"); do
  for name in tokenwire nginx; do
    port=$TW_PORT; [ "$name" = nginx ] && port=$NGINX_PORT
    wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "http://127.0.0.1:$port/healthz" >"$TMP/$name-$rep.txt"
    read -r rps p99 < <(parse "$TMP/$name-$rep.txt")
    echo "run $rep $name: $rps req/s, p99 ${p99} ms" >&2
    RUNS_JSON+="${RUNS_JSON:+,}{\"server\":\"$name\",\"rep\":$rep,\"requests_per_s\":$rps,\"p99_ms\":$p99}"
    echo "$name $rps $p99" >>"$TMP/all.txt"
  done
done

median() {  # median of column $2 for server $1
  awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$TMP/all.txt" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
TW_RPS=$(median tokenwire 2); TW_P99=$(median tokenwire 3)
NG_RPS=$(median nginx 2); NG_P99=$(median nginx 3)
RATIO=$(awk -v a="$TW_RPS" -v b="$NG_RPS" 'BEGIN { printf "%.2f", a / b }')

DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The CPU as the other benches record it (bench/lib/result.h MachineCpu):
# /proc/cpuinfo's model name, then its CPUID family, model and stepping.
CPU=$(awk -F'\t*: *' '$1 == "model name" { n = $2 } $1 == "cpu family" { f = $2 } $1 == "model" { m = $2 }
  $1 == "stepping" { s = $2 } /^$/ { exit }
  END { printf "%s (family %s, model %s, stepping %s)", n == "" ? "unknown CPU" : n, f, m, s }' /proc/cpuinfo)
OUT="$RUN_DIR/http-$(date -u +%Y%m%d-%H%M%S).json"
cat >"$OUT" <<JSON
{"benchmark":"http_keepalive_healthz","date":"$DATE","machine":"$(uname -m) $(nproc) cores","cpu":"$CPU",
 "nproc":$(nproc),"loadavg_start":"$LOAD_START","loadavg_end":"$(cut -d' ' -f1-3 /proc/loadavg)","verdicts":[],
 "command":"wrk -t$THREADS -c$CONNS -d${DURATION}s --latency GET /healthz","reps":$REPS,
 "nginx_version":"$(nginx -v 2>&1 | sed 's/.*nginx\///')",
 "median":{"tokenwire":{"requests_per_s":$TW_RPS,"p99_ms":$TW_P99},"nginx":{"requests_per_s":$NG_RPS,"p99_ms":$NG_P99},"ratio_rps":$RATIO},
 "runs":[$RUNS_JSON]}
JSON
echo "raw results: $OUT" >&2
echo "| HTTP keep-alive GET /healthz (wrk -t$THREADS -c$CONNS -d${DURATION}s, median of $REPS) | TokenWire $TW_RPS req/s, p99 $TW_P99 ms | nginx $NG_RPS req/s, p99 $NG_P99 ms | ratio $RATIO |"
[ -x build/bench/render ] && build/bench/render --results "$RUN_DIR" --verdicts "$(basename "$OUT")"
exit 0
