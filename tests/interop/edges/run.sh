#!/usr/bin/env bash
# The HTTP edges with curl (issue 32): X-Request-Id echoed when the client
# sends a valid one, replaced when it is invalid, made by the server when
# absent (unique), and named in the access log; a CORS preflight; vLLM's
# /health, /version and /tokenize. Needs build/tokenwire and curl. Prints
# PASS/FAIL lines; exit 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source tests/interop/lib.sh

tw_start edges --backend mock --mock-ttft-ms 0 --log-level info --allowed-origins http://page.example
base="http://127.0.0.1:$TW_PORT"
failed=0
check() {  # check LABEL EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "PASS edges: $1"; else echo "FAIL edges: $1: expected '$2', got '$3'"; failed=1; fi
}
# header NAME CURL-ARGS...: the value of response header NAME.
header() {
  local name=$1; shift
  curl -s -o /dev/null -D - "$@" | tr -d '\r' | sed -n "s/^$name: //Ip" | head -1
}

check "a valid X-Request-Id is echoed" "curl-trace-7" "$(header X-Request-Id -H 'X-Request-Id: curl-trace-7' "$base/v1/models")"
invalid=$(header X-Request-Id -H 'X-Request-Id: has space' "$base/v1/models")
check "an invalid X-Request-Id is replaced" "yes" "$( [[ $invalid =~ ^[0-9a-f]{16}-[0-9a-f]+$ ]] && echo yes || echo "no: $invalid")"
a=$(header X-Request-Id "$base/healthz")
b=$(header X-Request-Id "$base/healthz")
check "an absent X-Request-Id is made, unique" "yes" "$( [[ $a =~ ^[0-9a-f]{16}-[0-9a-f]+$ && $a != "$b" ]] && echo yes || echo "no: $a $b")"
check "an error carries it" "on-a-404" "$(header X-Request-Id -H 'X-Request-Id: on-a-404' "$base/v1/nope")"
found=no
for _ in $(seq 100); do
  grep -q 'access method=GET path=/v1/models status=200 .*request_id=curl-trace-7' "$WORK/edges.log" && { found=yes; break; }
  sleep 0.05
done
check "the access log names it" "yes" "$found"

check "a preflight is 204" "204" "$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: http://page.example' \
  -H 'Access-Control-Request-Method: POST' "$base/v1/completions")"
check "it allows the origin" "http://page.example" "$(header Access-Control-Allow-Origin -X OPTIONS \
  -H 'Origin: http://page.example' -H 'Access-Control-Request-Method: POST' "$base/v1/completions")"

check "/health" "200:" "$(curl -s -w '%{http_code}:' "$base/health")"
check "/version names the model" "yes" "$(curl -s "$base/version" | grep -q '"model":"mock-gpt2","backend":"mock"' && echo yes || echo no)"
check "/tokenize" '{"count":2,"max_model_len":1073741824,"tokens":[15496,995]}' \
  "$(curl -s "$base/tokenize" -H 'Content-Type: application/json' -d '{"prompt":"Hello world"}')"
exit $failed
