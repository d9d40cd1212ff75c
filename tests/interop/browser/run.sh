#!/usr/bin/env bash
# The page at GET / in headless Chromium, against one TokenWire instance
# (mock backend, --lab for the emission log): over SSE (EventSource), over
# SSE read by fetch() with a slow reader, and over WebSocket, each stream
# dropped twice mid-way and resumed; then the Cancel button over SSE (DELETE)
# and WebSocket (the cancel op). page_scenarios.mjs checks the ids the page
# received (exactly 1..N) and its tokens against the emission log.
# Then schema_check.mjs: the schema box (structured output) on the CPU
# backend, the output validated by the page.
# Then cors_check.mjs: a page from another origin calling the API with fetch()
# (allowed by --allowed-origins, and refused for an origin not listed).
# Needs build/tokenwire, node and chromium. Prints PASS/FAIL; exit 1 on FAIL.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tests/interop/lib.sh

tw_start direct --backend mock --lab --mock-ttft-ms 50 --mock-tokens-per-s 50 --linger-ms 5000
node tests/interop/browser/page_scenarios.mjs --base "http://127.0.0.1:$TW_PORT" --label "browser direct" \
  'transport=sse&max_tokens=40&drop_after=5,20' \
  'transport=sse&slow=1&slow_ms=50&max_tokens=40&drop_after=5,20' \
  'transport=ws&max_tokens=40&drop_after=5,20' \
  'transport=sse&max_tokens=20&logprobs=3' \
  'transport=ws&max_tokens=20&logprobs=' \
  'transport=sse&max_tokens=200&drop_after=5&cancel_after=20' \
  'transport=ws&max_tokens=200&drop_after=5&cancel_after=20'

# The schema box (structured output) against the CPU backend (random tiny
# GPT-2): the page sends guided_json and checks the text itself.
tw_start schema --backend cpu --threads 1
node tests/interop/browser/schema_check.mjs --base "http://127.0.0.1:$TW_PORT"

# CORS (--allowed-origins): a page from another origin calls /v1/completions
# with fetch() and an API key; a third origin is refused by Chromium.
page_port=$(free_port)
tw_start cors --backend mock --mock-ttft-ms 0 --mock-tokens-per-s 500 --api-key interop-key \
  --allowed-origins "http://127.0.0.1:$page_port"
node tests/interop/browser/cors_check.mjs --api "http://127.0.0.1:$TW_PORT" --key interop-key \
  --allowed "http://127.0.0.1:$page_port" --refused "http://localhost:$page_port"
