#!/usr/bin/env bash
# CPU model benchmark, side by side: TokenWire's CPU forward pass
# (build/bench_cpu_model), the PyTorch peer (torch_gpt2_peer.py, if torch is
# installed), and the machine's floors (read bandwidth, FMA peak, measured by
# the bench program). Writes DIR/cpu_model-<UTC date>.json, prints a
# markdown table and the verdicts against the targets (build/bench/render
# --verdicts). DIR: --out, else $BENCH_OUT, else a new bench/runs/<date>/
# (bench/lib/common.sh; never bench/results/).
#
#   bash bench/cpu_model/run.sh [--quick] [--threads N] [--weights f32,bf16,q8]
#                               [--isa avx512,avx2] [--no-peer] [--out DIR]
#
# --weights / --isa: the weight formats and kernel levels to measure, every
# pair in turn in each round (default: f32 at the best level); the first
# pair also fills the single-run table against the peer. A second table
# lists every pair with its floors (the format's weight bytes) and each
# format's speed against f32 at the same level.
# The peer needs: apt-get install -y python3-torch libopenblas0-pthread
# Both sides run with the same thread count (default: all hardware threads).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh

QUICK=""
THREADS="$(nproc)"
WEIGHTS="f32"
ISA=""
PEER=1
OUT_FLAG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK="--quick"; shift ;;
    --threads) THREADS="$2"; shift 2 ;;
    --weights) WEIGHTS="$2"; shift 2 ;;
    --isa) ISA="$2"; shift 2 ;;
    --no-peer) PEER=0; shift ;;
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick] [--threads N] [--weights f32,bf16,q8] [--isa avx512,avx2] [--no-peer] [--out DIR]" >&2; exit 2 ;;
  esac
done
RUN_DIR=$(bench_run_dir "$OUT_FLAG")

# The top-level Makefile includes bench/*/bench.mk; fall back to naming ours.
if make -n build/bench_cpu_model >/dev/null 2>&1; then
  make -j2 build/bench_cpu_model build/bench/render
else
  make -j2 -f Makefile -f bench/cpu_model/bench.mk build/bench_cpu_model build/bench/render
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
DATE="$(date -u +%Y-%m-%d)"
OUT="$RUN_DIR/cpu_model-${DATE}.json"

echo "== TokenWire CPU forward (threads ${THREADS})"
LOAD_OURS="$(cut -d' ' -f1-3 /proc/loadavg)"
build/bench_cpu_model --threads "$THREADS" $QUICK --weights "$WEIGHTS" ${ISA:+--isa "$ISA"} --out "$TMP/ours.json"

echo "== PyTorch peer"
LOAD_PEER="$(cut -d' ' -f1-3 /proc/loadavg)"
PEER_STATUS="ok"
if [ "$PEER" = 0 ]; then
  PEER_STATUS="not run (--no-peer)"
  echo "$PEER_STATUS"
  : > "$TMP/peer.txt"
elif /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  # The peers README's fastest configuration for this machine kind.
  if ! OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS="$THREADS" \
      /usr/bin/python3 bench/cpu_model/torch_gpt2_peer.py --threads "$THREADS" --batches 1,8,32 \
      ${QUICK:+--quick} | tee "$TMP/peer.txt"; then
    PEER_STATUS="peer failed"
  fi
else
  PEER_STATUS="torch not installed (apt-get install -y python3-torch libopenblas0-pthread)"
  echo "$PEER_STATUS"
  : > "$TMP/peer.txt"
fi

/usr/bin/python3 - "$TMP/ours.json" "$TMP/peer.txt" "$OUT" "$DATE" "$LOAD_OURS" "$LOAD_PEER" "$PEER_STATUS" <<'PY'
import json, re, subprocess, sys
ours_path, peer_path, out_path, date, load_ours, load_peer, peer_status = sys.argv[1:8]
ours = json.load(open(ours_path))
peer_text = open(peer_path).read()
peer = None
m = re.search(r"prefill 200 tok, B=1, last-pos logits: median\s+([\d.]+) ms", peer_text)
if m:
    peer = {"prefill_ms": float(m.group(1)), "decode": []}
    for b, ms in re.findall(r"decode step B=\s*(\d+), ctx 200: median\s+([\d.]+) ms", peer_text):
        peer["decode"].append({"batch": int(b), "median_ms": float(ms), "tok_per_s": int(b) / float(ms) * 1e3})
sys.path.insert(0, "bench/cpu_model")  # run from the repository root
from machine import cpu_name
cpu = cpu_name()
# The targets, each stated once: the table's last column and the verdicts
# (bench/lib/verdict.h's fields; build/bench/render --verdicts prints them).
PREFILL_MS_MAX = 200
DECODE_TOK_S_MIN = {1: 35, 32: 500}
verdicts = [{"check": "prefill 200 tokens, median", "measured": f"{ours['prefill']['median_ms']:.1f} ms",
             "target": f"≤ {PREFILL_MS_MAX} ms", "pass": ours["prefill"]["median_ms"] <= PREFILL_MS_MAX,
             "load_sensitive": True, "not_judged": ""}]
for d in ours["decode"]:
    if d["batch"] in DECODE_TOK_S_MIN:
        want = DECODE_TOK_S_MIN[d["batch"]]
        verdicts.append({"check": f"decode step B={d['batch']}, ctx 200", "measured": f"{d['tok_per_s']:.1f} tok/s",
                         "target": f"≥ {want} tok/s", "pass": d["tok_per_s"] >= want, "load_sensitive": True,
                         "not_judged": ""})
with open("/proc/loadavg") as f:
    load_end = " ".join(f.read().split()[:3])
result = {
    "date": date, "cpu": cpu, "nproc": int(subprocess.check_output(["nproc"]).strip()),
    "loadavg_before_ours": load_ours, "loadavg_before_peer": load_peer,
    "loadavg_start": load_ours, "loadavg_end": load_end, "verdicts": verdicts,
    "tokenwire": ours, "pytorch_peer": peer, "pytorch_peer_status": peer_status,
    "pytorch_peer_raw": peer_text,
}
json.dump(result, open(out_path, "w"), indent=1)

rows = []  # (label, ours value, peer value, floor value, unit, higher_is_better, target)
rows.append(("prefill 200 tokens", ours["prefill"]["median_ms"], peer and peer["prefill_ms"],
             ours["prefill"]["floor_ms"], "ms", False, f"<= {PREFILL_MS_MAX} ms"))
targets = {b: f">= {v} tok/s" for b, v in DECODE_TOK_S_MIN.items()}
for d in ours["decode"]:
    b = d["batch"]
    p = peer and next((x["tok_per_s"] for x in peer["decode"] if x["batch"] == b), None)
    rows.append((f"decode step B={b}, ctx 200", d["tok_per_s"], p, b / d["floor_ms"] * 1e3, "tok/s", True, targets.get(b, "")))

def fmt(v):
    return "n/a" if v is None else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")

print()
print(f"CPU model benchmark {date}: {cpu}, {ours['threads']} threads, isa {ours['isa']}; "
      f"floors: read {ours['read_bandwidth_bytes_per_s']/1e9:.1f} GB/s, FMA peak {ours['fma_peak_flops']/1e9:.0f} GFLOP/s; "
      f"load average before ours {load_ours}, before peer {load_peer}")
print()
print("| metric | unit | TokenWire | PyTorch | TokenWire vs PyTorch | floor | TokenWire / floor | target |")
print("|---|---|---|---|---|---|---|---|")
for label, o, p, f, unit, higher, target in rows:
    speedup = None if p is None else (o / p if higher else p / o)
    of_floor = o / f if higher else f / o  # fraction of the floor's speed reached
    print(f"| {label} | {unit} | {fmt(o)} | {fmt(p)} | {('%.2fx' % speedup) if speedup else 'n/a'} | "
          f"{fmt(f)} | {of_floor*100:.0f}% | {target} |")
print()
for s in ours.get("sampling_us_per_row", []):
    print(f"sample one row ({s['case']}): {s['median_us']:.1f} us")
print()
print(f"raw results: {out_path}")
PY

if /usr/bin/python3 -c "import json,sys; sys.exit(0 if len(json.load(open('$OUT'))['tokenwire'].get('variants', [])) > 1 else 1)"; then
  echo
  echo "Weight formats at every kernel level ('vs f32': speed over f32 at the same level):"
  echo
  /usr/bin/python3 bench/cpu_model/formats_table.py "$OUT"
fi
echo
build/bench/render --results "$RUN_DIR" --verdicts "$(basename "$OUT")"
