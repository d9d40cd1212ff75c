#!/usr/bin/env bash
# make interop: TokenWire against real clients and a real proxy.
#   (a) tests/interop/openai/run.sh — the official OpenAI Node client (npm);
#   (b) tests/interop/browser/run.sh — the page at GET / in headless Chromium,
#       SSE and WebSocket streams dropped and resumed, ids checked; a page
#       from another origin calling the API (CORS, --allowed-origins);
#   (c) tests/interop/nginx/run.sh — nginx (docs/nginx.conf) in front of two
#       instances: balancing, routing by the stream id's tag, SSE heartbeats
#       and WebSocket through the proxy, resumes landing on the right instance;
#   (d) tests/interop/edges/run.sh — curl: X-Request-Id, a CORS preflight,
#       vLLM's /health, /version and /tokenize.
# Installs chromium, nginx and node with apt-get when they are missing and it
# runs as root; otherwise says what to install and fails. Each part prints
# PASS/FAIL lines; the exit status is non-zero if any part failed.
set -uo pipefail
cd "$(dirname "$0")/../.."

chromium_bin() { command -v chromium || command -v chromium-browser || true; }
nginx_bin() { command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true; }
missing=()
[ -n "$(chromium_bin)" ] || missing+=(chromium)
[ -n "$(nginx_bin)" ] || missing+=(nginx)
command -v node >/dev/null || missing+=(nodejs)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "interop: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ] || ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; }; then
    echo "FAIL interop: missing ${missing[*]} and could not install them here;"
    echo "     install them (Debian/Ubuntu: sudo apt-get install -y ${missing[*]}; node 18 or newer) and rerun"
    exit 1
  fi
fi
export CHROMIUM=$(chromium_bin)
export PATH="$PATH:/usr/sbin"  # nginx, for a non-root user

make -j2 build/tokenwire >/dev/null || { echo "FAIL interop: make build/tokenwire"; exit 1; }

failed=()
part() {
  local name=$1 script=$2
  echo "== interop: $name"
  local t0=$SECONDS
  if bash "$script"; then echo "-- $name: ok ($((SECONDS - t0)) s)"; else failed+=("$name"); echo "-- $name: FAILED"; fi
}
part openai tests/interop/openai/run.sh
part browser tests/interop/browser/run.sh
part nginx tests/interop/nginx/run.sh
part edges tests/interop/edges/run.sh

if [ ${#failed[@]} -gt 0 ]; then
  echo "interop: FAILED: ${failed[*]}"
  exit 1
fi
echo "interop: all parts passed"
