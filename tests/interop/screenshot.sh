#!/usr/bin/env bash
# Regenerates docs/img/page.png: the page at GET / mid-stream in headless
# Chromium — an SSE stream dropped after id 22 and resumed, tokens still
# arriving, the metrics panel live. Mock backend, so it is the same every run
# apart from timings. Needs build/tokenwire, node and chromium.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/interop/lib.sh
make -j2 build/tokenwire >/dev/null
tw_start shot --backend mock --mock-ttft-ms 150 --mock-tokens-per-s 20
mkdir -p docs/img
node tests/interop/browser/screenshot.mjs \
  "http://127.0.0.1:$TW_PORT/?max_tokens=120&transport=sse&autorun=1&drop_after=22&seed=7" \
  docs/img/page.png 27
