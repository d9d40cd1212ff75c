#!/usr/bin/env bash
# Proves docs/websocket.md's browser script in headless Chromium: generate over
# new WebSocket("ws://…/v1/ws"), drop the connection three times, reconnect,
# resume, and compare the tokens the page collected with the mock producer's
# emission log (GET /lab/emissions/{id}). The page POSTs its result to a tiny
# local receiver. Needs build/tokenwire and Debian's chromium
# (apt-get install -y chromium). Exit status 0 = exact.
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT=${PORT:-18080}
REPORT_PORT=${REPORT_PORT:-18081}
WORK=$(mktemp -d)
build/tokenwire serve --port "$PORT" --backend mock --lab --mock-tokens-per-s 50 --linger-ms 5000 &
SERVER=$!
python3 - "$REPORT_PORT" "$WORK/result.json" <<'PY' &
import http.server, sys
port, path = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        open(path + ".tmp", "wb").write(body)
        import os; os.replace(path + ".tmp", path)
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
RECEIVER=$!
CHROME=
trap 'kill $SERVER $RECEIVER $CHROME 2>/dev/null || true; wait 2>/dev/null; rm -rf "$WORK" 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
PAGE="file://$PWD/docs/websocket/resume_demo.html?url=ws://127.0.0.1:$PORT/v1/ws&report=http://127.0.0.1:$REPORT_PORT/"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/profile" "$PAGE" >/dev/null 2>&1 &
CHROME=$!
for _ in $(seq 300); do [ -s "$WORK/result.json" ] && break; sleep 0.1; done
RESULT=$(cat "$WORK/result.json")
echo "page: $RESULT"
STREAM=$(printf '%s' "$RESULT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stream"])')
LOG=$(curl -sf "http://127.0.0.1:$PORT/lab/emissions/$STREAM")
echo "emission log: $LOG"
python3 - "$RESULT" "$LOG" <<'PY'
import json, sys
page, log = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert page["drops"] == 3, page
assert page["finish_reason"] == "length", page
assert page["events"] == len(log["tokens"]) + 2, (page["events"], len(log["tokens"]))
assert page["tokens"] == log["tokens"], "tokens differ"
print(f"exact: {page['events']} events, {len(page['tokens'])} tokens, {page['drops']} drops")
PY
