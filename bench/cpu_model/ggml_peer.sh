#!/usr/bin/env bash
# The ggml peer of the CPU model bench: ggml's own GPT-2 example programs
# (the CPU kernels llama.cpp vendors) on a GPT-2-small-shaped random model in
# F32, F16 and Q8_0, optionally interleaved with our build/bench_cpu_model
# (--ours) so that the ratios come from one run. See README.md ("ggml peer").
#
#   bash bench/cpu_model/ggml_peer.sh [--ggml-src DIR] [--ggml-commit SHA] [--ours]
#                                     [--rounds N] [--threads N] [--steps N] [--quiet-wait S] [--out DIR]
#
# --ggml-src: a ggml source tree (default: $GGML_SRC), e.g.
#   git clone https://github.com/ggml-org/ggml /tmp/ggml-src (measured at d99724f2b141)
# --ggml-commit: its commit, recorded in the JSON (default: $GGML_COMMIT, else
#   `git -C DIR rev-parse HEAD` when DIR is a git work tree, else "unknown").
# --ours: each round runs `build/bench_cpu_model --quick --weights f32,bf16,q8`
#   first, then ggml F32, F16, Q8_0; prints ours/ggml ratios.
# --rounds (default 3): medians are over the rounds. --steps (default 10):
#   decode steps per gpt-2-batched run (context 200 .. 200+steps-1).
# --quiet-wait (default 60): before each measured block wait up to S seconds
#   for no other runnable process (e.g. someone's build); recorded in the JSON.
#
# Builds (no lock) ggml with -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON (llama.cpp's
# default) into build/ggml-peer/build, writes the models into build/ggml-peer/
# (bench/cpu_model/ggml_gpt2_model.py needs python3-numpy), and takes
# `flock /tmp/tw-bench.lock` around every measurement. Writes
# DIR/ggml_peer-<UTC date>.json, where DIR is --out, else $BENCH_OUT, else a
# new bench/runs/<date>/ (bench/lib/common.sh; never bench/results/).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/lib/common.sh

SRC="${GGML_SRC:-}"
COMMIT="${GGML_COMMIT:-}"
OURS=0
QUIET_WAIT=60
ROUNDS=3
THREADS=2
STEPS=10
OUT_FLAG=""
usage() { echo "usage: $0 [--ggml-src DIR] [--ggml-commit SHA] [--ours] [--rounds N] [--threads N] [--steps N] [--quiet-wait S] [--out DIR]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ggml-src) SRC="$2"; shift 2 ;;
    --ggml-commit) COMMIT="$2"; shift 2 ;;
    --ours) OURS=1; shift ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --out) OUT_FLAG="$2"; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$SRC" ] && [ -f "$SRC/examples/gpt-2/main-batched.cpp" ] || { echo "need --ggml-src DIR (or GGML_SRC) with examples/gpt-2" >&2; exit 2; }
SRC="$(cd "$SRC" && pwd)"
if [ -z "$COMMIT" ]; then
  COMMIT="$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)"
fi

PY=/usr/bin/python3
LOCK=/tmp/tw-bench.lock
W=build/ggml-peer
BIN="$W/build/bin"
mkdir -p "$W"
RUN_DIR=$(bench_run_dir "$OUT_FLAG")

# --- build (no lock) ---------------------------------------------------------
echo "== building ggml examples ($SRC, commit $COMMIT) into $W/build"
cmake -S "$SRC" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON \
  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=ON > "$W/cmake.log"
cmake --build "$W/build" -j "$(nproc)" --target gpt-2-backend gpt-2-batched gpt-2-quantize > "$W/build.log"
if [ "$OURS" = 1 ]; then
  echo "== building build/bench_cpu_model"
  # As run.sh: the top-level Makefile may include bench/*/bench.mk already.
  if make -n build/bench_cpu_model >/dev/null 2>&1; then
    make -j2 build/bench_cpu_model
  else
    make -j2 -f Makefile -f bench/cpu_model/bench.mk build/bench_cpu_model
  fi
fi

# --- models (no lock) ---------------------------------------------------------
for f in f32 f16; do
  if [ ! -s "$W/gpt2-$f.bin" ] || [ "$W/gpt2-$f.bin" -ot bench/cpu_model/ggml_gpt2_model.py ]; then
    echo "== writing $W/gpt2-$f.bin"
    $PY bench/cpu_model/ggml_gpt2_model.py --ftype "$f" --out "$W/gpt2-$f.bin"
  fi
done
if [ ! -s "$W/gpt2-q8_0.bin" ] || [ "$W/gpt2-q8_0.bin" -ot "$W/gpt2-f32.bin" ]; then
  echo "== quantizing $W/gpt2-q8_0.bin (gpt-2-quantize ... q8_0)"
  "$BIN/gpt-2-quantize" "$W/gpt2-f32.bin" "$W/gpt2-q8_0.bin.tmp" q8_0 > "$W/quantize.log" 2>&1
  mv "$W/gpt2-q8_0.bin.tmp" "$W/gpt2-q8_0.bin"
fi
PROMPT="$($PY bench/cpu_model/ggml_gpt2_model.py --prompt)"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
DATE="$(date -u +%Y-%m-%d)"
OUT="$RUN_DIR/ggml_peer-${DATE}.json"
FORMATS="f32 f16 q8_0"
BATCHES="1 8 32"
NPRED=$((STEPS + 1))   # gpt-2-batched decodes n_predict-1 steps after the prompt

# The commands (recorded in the JSON; MODEL is build/ggml-peer/gpt2-<format>.bin).
CMD_PREFILL="$BIN/gpt-2-backend -m MODEL -t $THREADS -s 1 -b 200 -n 1 --ignore-eos -p PROMPT"
CMD_DECODE="$BIN/gpt-2-batched -m MODEL -t $THREADS -s 1 -c 1024 -np B -n $NPRED --ignore-eos -p PROMPT"
CMD_OURS="build/bench_cpu_model --threads $THREADS --quick --weights f32,bf16,q8 --out FILE"

# Each measured block runs under the lock and, once it holds the lock, first
# waits (up to QUIET_WAIT s) until nothing else is runnable (/proc/stat
# procs_running, sampled 5 times over a second, less the sampler itself), so
# that another user's build (which takes no lock) does not land inside one
# side of a round. Records what it saw in TMP/<block>.quiet and the load
# average in TMP/<block>.load. The function is written to a file that the
# locked shell sources.
cat > "$TMP/quiet.sh" <<'SH'
wait_quiet() {  # TMP-prefix quiet-wait-seconds
  local t0 now max n i
  t0=$(date +%s)
  while :; do
    max=0
    for i in 1 2 3 4 5; do
      n=$(awk '/^procs_running/ {print $2 - 1}' /proc/stat)
      [ "$n" -gt "$max" ] && max=$n
      sleep 0.2
    done
    now=$(date +%s)
    if [ "$max" -le 0 ] || [ $((now - t0)) -ge "$2" ]; then
      echo "others_running=$max waited_s=$((now - t0))" > "$1.quiet"
      cut -d' ' -f1-3 /proc/loadavg > "$1.load"
      [ "$max" -gt 0 ] && echo "   (not quiet after ${2}s: $max other runnable)" >&2
      return 0
    fi
  done
}
SH

# One ggml format: prefill once, then decode at B=1, 8, 32, under one lock.
ggml_block() {  # round format
  local r="$1" f="$2" m="$W/gpt2-$2.bin"
  flock "$LOCK" bash -c '
    set -e
    . "$7"; wait_quiet "$6" "$8"
    bin="$1"; m="$2"; t="$3"; npred="$4"; p="$5"; o="$6"
    "$bin/gpt-2-backend" -m "$m" -t "$t" -s 1 -b 200 -n 1 --ignore-eos -p "$p" > "$o-prefill.txt" 2>&1
    for b in 1 8 32; do
      "$bin/gpt-2-batched" -m "$m" -t "$t" -s 1 -c 1024 -np "$b" -n "$npred" --ignore-eos -p "$p" > "$o-b$b.txt" 2>&1
    done' _ "$BIN" "$m" "$THREADS" "$NPRED" "$PROMPT" "$TMP/r$r-$f" "$TMP/quiet.sh" "$QUIET_WAIT"
  printf '   ggml %-5s %s\n' "$f" "$(grep -h 'predict time' "$TMP/r$r-$f-prefill.txt" "$TMP/r$r-$f-b32.txt" | tr -s ' ' | tr '\n' ' ')"
}

ours_block() {  # round
  local r="$1"
  flock "$LOCK" bash -c '. "$1"; wait_quiet "$2" "$3"; shift 3; exec "$@"' _ "$TMP/quiet.sh" "$TMP/r$r-ours" "$QUIET_WAIT" \
    build/bench_cpu_model --threads "$THREADS" --quick --weights f32,bf16,q8 --out "$TMP/r$r-ours.json" \
    > "$TMP/r$r-ours.txt" 2>&1
  grep -E 'prefill|not quiet' "$TMP/r$r-ours.txt" | sed 's/^/   ours /' || true
}

# Warm-up (not counted): one prefill per format (page cache, CPU clocks).
echo "== warm-up (not counted)"
for f in $FORMATS; do
  flock "$LOCK" "$BIN/gpt-2-backend" -m "$W/gpt2-$f.bin" -t "$THREADS" -s 1 -b 200 -n 1 --ignore-eos -p "$PROMPT" \
    > "$TMP/warm-$f.txt" 2>&1
done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
T0=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  [ "$OURS" = 1 ] && ours_block "$r"
  for f in $FORMATS; do ggml_block "$r" "$f"; done
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "== measured in $(( $(date +%s) - T0 )) s"

$PY - "$TMP" "$OUT" "$DATE" "$ROUNDS" "$THREADS" "$STEPS" "$OURS" "$COMMIT" "$SRC" "$LOAD_START" "$LOAD_END" \
  "$CMD_PREFILL" "$CMD_DECODE" "$CMD_OURS" <<'PY'
import json, os, re, statistics, subprocess, sys
(tmp, out_path, date, rounds, threads, steps, ours_on, commit, src, load_start, load_end,
 cmd_prefill, cmd_decode, cmd_ours) = sys.argv[1:15]
rounds, threads, steps, ours_on = int(rounds), int(threads), int(steps), ours_on == "1"
FORMATS = ["f32", "f16", "q8_0"]
BATCHES = [1, 8, 32]

def read(p):
    return open(os.path.join(tmp, p), errors="replace").read()

def num(pat, text, what):
    m = re.search(pat, text)
    if not m:
        raise SystemExit(f"cannot find {what} in output:\n{text[-2000:]}")
    return float(m.group(1))

ggml = {f: {"prefill_ms": [], "decode": {b: [] for b in BATCHES}, "loadavg": [], "quiet": []} for f in FORMATS}
raw_tail = {}
for r in range(1, rounds + 1):
    for f in FORMATS:
        g = ggml[f]
        g["loadavg"].append(read(f"r{r}-{f}.load").strip())
        g["quiet"].append(read(f"r{r}-{f}.quiet").strip())
        t = read(f"r{r}-{f}-prefill.txt")
        ntok = int(num(r"number of tokens in prompt = (\d+)", t, "prompt tokens"))
        if ntok != 200:
            raise SystemExit(f"prompt tokenized into {ntok} tokens, not 200")
        g["prefill_ms"].append(num(r"predict time =\s*([\d.]+) ms", t, "predict time"))
        if r == rounds:
            raw_tail[f"{f}-prefill"] = "\n".join(l for l in t.splitlines() if l.startswith("main:") and "time" in l)
        for b in BATCHES:
            t = read(f"r{r}-{f}-b{b}.txt")
            pred = num(r"predict time =\s*([\d.]+) ms", t, "predict time")
            nd = int(num(r"n_decoded =\s*(\d+)", t, "n_decoded"))
            if nd != b * steps:
                raise SystemExit(f"{f} B={b}: n_decoded {nd}, expected {b * steps}")
            g["decode"][b].append({"predict_ms": pred, "n_decoded": nd, "step_ms": pred / steps,
                                   "tok_per_s": nd / pred * 1e3})
            if r == rounds:
                raw_tail[f"{f}-b{b}"] = "\n".join(l for l in t.splitlines() if l.startswith("main:") and "time" in l or "n_decoded" in l)

med = statistics.median
peer = {}
for f in FORMATS:
    g = ggml[f]
    peer[f] = {
        "prefill_ms": {"median": med(g["prefill_ms"]), "samples": g["prefill_ms"]},
        "decode": [{"batch": b, "median_tok_per_s": med([x["tok_per_s"] for x in g["decode"][b]]),
                    "median_step_ms": med([x["step_ms"] for x in g["decode"][b]]),
                    "samples": g["decode"][b]} for b in BATCHES],
        "loadavg_before_each_round": g["loadavg"],
        "others_running_before_each_round": g["quiet"],
    }

ours = None
OURS_FMT = {"f32": "f32", "bf16": "f16", "q8": "q8_0"}  # ours -> ggml peer format
if ours_on:
    runs = [json.load(open(os.path.join(tmp, f"r{r}-ours.json"))) for r in range(1, rounds + 1)]
    ours = {"isa": runs[0].get("isa"), "runs": runs,
            "loadavg_before_each_round": [read(f"r{r}-ours.load").strip() for r in range(1, rounds + 1)],
            "others_running_before_each_round": [read(f"r{r}-ours.quiet").strip() for r in range(1, rounds + 1)],
            "formats": {}}
    for w in OURS_FMT:
        vs = [next(v for v in run["variants"] if v["weights"] == w) for run in runs]
        ours["formats"][w] = {
            "prefill_ms": {"median": med([v["prefill"]["median_ms"] for v in vs]),
                           "samples": [v["prefill"]["median_ms"] for v in vs]},
            "decode": [{"batch": b,
                        "median_tok_per_s": med([next(d for d in v["decode"] if d["batch"] == b)["tok_per_s"] for v in vs]),
                        "samples_tok_per_s": [next(d for d in v["decode"] if d["batch"] == b)["tok_per_s"] for v in vs]}
                       for b in BATCHES],
        }

sys.path.insert(0, "bench/cpu_model")  # run from the repository root
from machine import cpu_name
cpu = cpu_name()

result = {
    "date": date, "cpu": cpu, "nproc": os.cpu_count(), "threads": threads, "rounds": rounds,
    "loadavg_start": load_start, "loadavg_end": load_end,
    "ggml": {"commit": commit, "source": src, "cmake": "-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON",
             "model": "GPT-2-small shape, random normal(0, 0.02), ln gamma 1 beta 0, wte tied as lm_head; "
                      "f32/f16 by bench/cpu_model/ggml_gpt2_model.py, q8_0 by gpt-2-quantize from f32",
             "commands": {"prefill": cmd_prefill, "decode": cmd_decode},
             "prefill_measures": "gpt-2-backend 'predict time' with -b 200 -n 1: the one graph evaluation of the "
                                 "200-token prompt (lm_head computed for all 200 positions; load and sampling excluded)",
             "decode_measures": f"gpt-2-batched 'predict time' / n_decoded: {steps} decode steps of B sequences "
                                f"sharing the 200-token prompt's KV cells, positions 200..{199 + steps}; "
                                "graph build, mask fill and compute included; sampling excluded",
             "formats": peer, "raw_last_round": raw_tail},
    "tokenwire": ours, "tokenwire_command": cmd_ours if ours_on else None,
}
if ours_on:
    ratios = {}
    for w, f in OURS_FMT.items():
        o, p = ours["formats"][w], peer[f]
        ratios[f"{w}_vs_{f}"] = {
            "prefill_speed": p["prefill_ms"]["median"] / o["prefill_ms"]["median"],
            **{f"decode_B{d['batch']}": d["median_tok_per_s"] / pd["median_tok_per_s"]
               for d, pd in zip(o["decode"], p["decode"])}}
    result["ratios_ours_over_ggml"] = ratios
json.dump(result, open(out_path, "w"), indent=1)

def fmt(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"

print()
print(f"ggml peer {date}: {cpu}, {threads} threads, {rounds} rounds (medians); ggml {commit[:12]}; "
      f"load average at start {load_start}, at end {load_end}")
print()
hdr = "| metric | unit |"
sep = "|---|---|"
cols = []
for w, f in OURS_FMT.items():
    if ours_on:
        cols += [(f"ours {w}", "o", w), (f"ggml {f.upper()}", "p", f), (f"ours/ggml", "r", w)]
    else:
        cols += [(f"ggml {f.upper()}", "p", f)]
for c in cols:
    hdr += f" {c[0]} |"
    sep += "---|"
print(hdr)
print(sep)
for label, unit, key in [("prefill 200 tokens", "ms", None)] + [(f"decode B={b}, ctx ~200", "tok/s", b) for b in BATCHES]:
    line = f"| {label} | {unit} |"
    for _, kind, k in cols:
        if key is None:
            val = {"o": lambda: ours["formats"][k]["prefill_ms"]["median"],
                   "p": lambda: peer[k]["prefill_ms"]["median"],
                   "r": lambda: peer[OURS_FMT[k]]["prefill_ms"]["median"] / ours["formats"][k]["prefill_ms"]["median"]}[kind]()
        else:
            bi = BATCHES.index(key)
            val = {"o": lambda: ours["formats"][k]["decode"][bi]["median_tok_per_s"],
                   "p": lambda: peer[k]["decode"][bi]["median_tok_per_s"],
                   "r": lambda: ours["formats"][k]["decode"][bi]["median_tok_per_s"] / peer[OURS_FMT[k]]["decode"][bi]["median_tok_per_s"]}[kind]()
        line += f" {val:.2f}x |" if kind == "r" else f" {fmt(val)} |"
    print(line)
print()
if ours_on:
    print("ours/ggml: speed ratio (prefill: ggml ms / ours ms; decode: ours tok/s / ggml tok/s); > 1 means ours is faster.")
print(f"raw results: {out_path}")
PY
