#!/usr/bin/env bash
# Regenerates docs/img/page.png: the page at GET / mid-stream in headless
# Chromium — an SSE stream of the built-in model (seed 9, so the same text
# every run) dropped after id 22 and resumed, tokens still arriving (the
# page's slow reader paces them: the model itself is done in a fraction of a
# second), the metrics panel live. Needs build/tokenwire, node and chromium.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/interop/lib.sh
make -j2 build/tokenwire >/dev/null
tw_start shot --backend cpu --threads 1
mkdir -p docs/img
node tests/interop/browser/screenshot.mjs \
  "http://127.0.0.1:$TW_PORT/?max_tokens=120&transport=sse&slow=1&slow_ms=60&autorun=1&drop_after=22&seed=9" \
  docs/img/page.png 27
