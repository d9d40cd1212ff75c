#!/usr/bin/env bash
# The OpenAI Node client against a real TokenWire server (docs/openai.md).
#
#   bash tests/interop/openai/run.sh [path/to/tokenwire]   (default build/tokenwire)
#
# Installs the pinned client (npm ci) if node_modules is missing, starts
# `tokenwire serve` on free ports (the CPU backend with random tiny GPT-2
# weights, no download; and a slow mock backend for the mid-stream error
# check), runs check_openai.mjs against them, stops both servers (by pid) and
# exits with the script's status. Needs node >= 20 and npm; the first run needs
# the npm registry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bin="${1:-$root/build/tokenwire}"

if [[ ! -x "$bin" ]]; then
  echo "openai interop: no tokenwire binary at '$bin' (run make first)" >&2
  exit 2
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "openai interop: '$tool' not found (node >= 20 is needed)" >&2
    exit 2
  fi
done
if [[ ! -d "$here/node_modules/openai" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tw-openai.XXXXXX")"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME FLAGS...: `tokenwire serve --port 0 FLAGS` logging to $work/NAME.log;
# waits for its "listening on 127.0.0.1:PORT" line and sets $port.
start() {
  local name=$1
  shift
  "$bin" serve --host 127.0.0.1 --port 0 --drain-ms 2000 "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  port=""
  for _ in $(seq 1 300); do
    port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/$name.log" | head -n 1)"
    [[ -n "$port" ]] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "FAIL openai: tokenwire ($name) exited before listening:" >&2
      cat "$work/$name.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "FAIL openai: tokenwire ($name) printed no 'listening on' line within 30 s:" >&2
  cat "$work/$name.log" >&2
  return 1
}

# The model under test: GPT-2 on the CPU backend, random tiny weights (the
# rows below pin its outputs; the built-in model ends fortunes early).
start cpu --backend cpu --model random-tiny --threads 2 --max-new-tokens 64
cpu_port=$port
# A slow mock for the error-after-the-200 check.
start mock --backend mock --mock-ttft-ms 10 --mock-tokens-per-s 50
mock_port=$port

status=0
TOKENWIRE_BASE_URL="http://127.0.0.1:$cpu_port/v1" TOKENWIRE_MODEL="gpt2-random-tiny" \
  TOKENWIRE_MOCK_BASE_URL="http://127.0.0.1:$mock_port/v1" \
  node "$here/check_openai.mjs" || status=$?
# The same parameter rows with plain curl.
bash "$here/param_rows.sh" "http://127.0.0.1:$cpu_port/v1" gpt2-random-tiny || status=1
if [[ $status -ne 0 ]]; then
  for name in cpu mock; do
    echo "openai interop: $name server log:" >&2
    cat "$work/$name.log" >&2
  done
fi
exit $status
