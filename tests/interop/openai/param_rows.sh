#!/usr/bin/env bash
# Every row of docs/openai.md's parameter tables (param_rows.json) sent with
# plain curl: supported, ignored and unknown params answer 200, refused ones
# 400 with OpenAI's envelope naming the param. Node reads the rows (it is
# there for the client check); curl sends them.
#
#   bash tests/interop/openai/param_rows.sh http://127.0.0.1:PORT/v1 MODEL
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base=${1:?usage: param_rows.sh BASE_URL MODEL}
model=${2:?usage: param_rows.sh BASE_URL MODEL}
work=$(mktemp -d "${TMPDIR:-/tmp}/tw-rows.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One line per row: path, expected status, param (or -), the body.
node --input-type=module -e '
  import { readFileSync } from "node:fs";
  const doc = JSON.parse(readFileSync(process.argv[1], "utf8"));
  for (const r of doc.rows) {
    const body = { model: process.argv[2], ...(r.api === "chat" ? doc.chat_base : doc.completions_base), ...r.params };
    for (const k of Object.keys(body)) if (body[k] === null) delete body[k];
    const path = r.api === "chat" ? "/chat/completions" : "/completions";
    console.log([path, r.expect === "refused" ? 400 : 200, r.param ?? "-", JSON.stringify(body)].join("\t"));
  }' "$here/param_rows.json" "$model" > "$work/rows.tsv" || { echo "FAIL rows: node could not read param_rows.json"; exit 1; }

fail=0
n=0
while IFS=$'\t' read -r path want param body; do
  n=$((n + 1))
  code=$(curl -sS -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" \
    "$base$path") || code=000
  if [ "$code" != "$want" ]; then
    echo "FAIL rows: POST $path $body -> $code, want $want: $(head -c 300 "$work/body")"
    fail=$((fail + 1))
    continue
  fi
  if [ "$want" = 400 ] && ! grep -q "\"param\":\"$param\"" "$work/body"; then
    echo "FAIL rows: POST $path $body -> 400 without \"param\":\"$param\": $(head -c 300 "$work/body")"
    fail=$((fail + 1))
  fi
  if [ "$want" = 400 ] && ! grep -q '"type":"invalid_request_error"' "$work/body"; then
    echo "FAIL rows: POST $path $body -> 400 not in OpenAI's envelope: $(head -c 300 "$work/body")"
    fail=$((fail + 1))
  fi
done < "$work/rows.tsv"
if [ "$fail" -gt 0 ]; then
  echo "FAIL rows: $fail of $n rows"
  exit 1
fi
echo "PASS rows: $n parameter rows with curl"
