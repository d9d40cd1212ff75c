# Shared helpers for the interop scripts (sourced, not run). Each script gets
# a temp dir ($WORK), starts its processes with tw_start/bg, and the EXIT trap
# ends exactly those (by pid) and removes $WORK.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tw-interop.XXXXXX")
export TMPDIR=$WORK  # Chromium's profile (cdp.mjs) goes here too, even if node is killed
TW_PIDS=()
tw_cleanup() {
  local p
  for p in "${TW_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${TW_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap tw_cleanup EXIT

# A free TCP port on 127.0.0.1 (the kernel's pick; free when asked).
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# tw_start NAME FLAGS...: starts build/tokenwire serve --port 0 FLAGS, waits for
# its "listening on HOST:PORT" line, and sets TW_PORT. Its log: $WORK/NAME.log.
tw_start() {
  local name=$1; shift
  build/tokenwire serve --host 127.0.0.1 --port 0 "$@" >"$WORK/$name.log" 2>&1 &
  TW_PIDS+=($!)
  local i
  for i in $(seq 100); do
    TW_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/$name.log")
    [ -n "$TW_PORT" ] && return 0
    sleep 0.05
  done
  echo "FAIL $name: tokenwire did not start:"; cat "$WORK/$name.log"; return 1
}

# wait_http URL: until it answers (at most 5 s).
wait_http() {
  local i
  for i in $(seq 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "FAIL: $1 did not answer"; return 1
}
