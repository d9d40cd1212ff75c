#!/usr/bin/env bash
# make model: trains the default model from its pinned corpus and seed and
# checks that the result is, bit for bit, the checkpoint committed in
# src/model/data/gpt2-fortunes/ (the one `tokenwire serve` embeds).
#
#   make model                 train into build/model/, compare with the committed one
#   make model MODEL_UPDATE=1  the same, then copy the result over the committed one
#
# The corpus: the quotations of Debian's `fortunes` package (version pinned
# below; BSD licence, /usr/share/doc/fortunes/copyright), every file of
# /usr/share/games/fortunes but ascii-art (drawings, not prose), in name
# order, joined with a "%" line so every fortune stays one document. Its
# SHA-256 is pinned too: another version of the package is refused, not
# trained on. The package is installed from Debian's archive when missing
# (as root; otherwise the script says what to run).
#
# The training: weights_tool train with the flags below (about 8 minutes
# on 2 cores of a 2-vCPU AMD EPYC, Zen 5); steps are counted, not timed, and
# every draw is seeded, so the bytes do not depend on the machine's speed or
# its thread count (src/train/trainer.h says on which CPUs). The run's log
# (build/model/model-train.csv: loss per step, validation loss every 50)
# is what RESULTS.md's chart draws (bench/results/model-train.csv and .json).
set -euo pipefail
cd "$(dirname "$0")/.."

FORTUNES_VERSION="1:1.99.1-7.3"
CORPUS_SHA256="e2cc75506b3f47b03df9a0ecc8fee5b7e9d4ad7af936196835ffc8ee0ee77ff5"
OUT=${MODEL_OUT:-build/model}
COMMITTED=src/model/data/gpt2-fortunes
TRAIN_FLAGS=(--layers 4 --heads 4 --embd 128 --positions 1024 --seq 256 --batch 16 --steps 500
  --lr 2e-3 --min-lr 2e-4 --warmup 20 --weight-decay 0.1 --clip 1.0 --seed 0
  --val-every 50 --val-windows 32 --dtype bf16)

have_version=$(dpkg-query -W -f='${Version}' fortunes 2>/dev/null || true)
if [ -z "$have_version" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing Debian's fortunes package (the corpus)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "fortunes=$FORTUNES_VERSION" >/dev/null
    have_version=$(dpkg-query -W -f='${Version}' fortunes)
  else
    echo "make model: the corpus is Debian's fortunes package: apt-get install fortunes=$FORTUNES_VERSION (as root)" >&2
    exit 1
  fi
fi
if [ "$have_version" != "$FORTUNES_VERSION" ]; then
  echo "make model: fortunes $have_version is installed; the pinned corpus is $FORTUNES_VERSION" >&2
  exit 1
fi

mkdir -p "$OUT"
corpus="$OUT/fortunes.txt"
: >"$corpus"
for f in $(cd /usr/share/games/fortunes && ls | grep -v -e '\.dat$' -e '\.u8$' -e '^ascii-art$' | LC_ALL=C sort); do
  cat "/usr/share/games/fortunes/$f" >>"$corpus"
  printf '\n%%\n' >>"$corpus"  # a file's last fortune ends here (some lack their "%")
done
sum=$(sha256sum "$corpus" | cut -d' ' -f1)
if [ "$sum" != "$CORPUS_SHA256" ]; then
  echo "make model: the corpus $corpus has SHA-256 $sum, not the pinned $CORPUS_SHA256" >&2
  exit 1
fi
echo "corpus: $corpus ($(wc -c <"$corpus") bytes, SHA-256 as pinned)"

make -s -j"$(nproc)" build/weights_tool
start=$(date +%s)
build/weights_tool train --corpus "$corpus" --out "$OUT/gpt2-fortunes" --log "$OUT/model-train.csv" \
  "${TRAIN_FLAGS[@]}" 2>&1 | tee "$OUT/train.out"
seconds=$(( $(date +%s) - start ))
echo "trained in $seconds s"

# The run's record beside its log (build/bench/render draws both into RESULTS.md).
model=$(sed -n 's/^model: .*; \([0-9]*\) threads*, kernels \([a-z0-9]*\)$/\1 \2/p' "$OUT/train.out")
losses=$(sed -n 's/^validation loss \([0-9.]*\); with the weights rounded to bf16 \([0-9.]*\)$/\1 \2/p' "$OUT/train.out")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
family=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
cpumodel=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
cat >"$OUT/model-train.json" <<EOF
{"benchmark":"model_train","date":"$(date -u +%Y-%m-%d)","machine":"$cpu (family $family, model $cpumodel), $(nproc) vCPUs",
 "threads":${model%% *},"isa":"${model##* }","seconds":$seconds,
 "command":"make model (weights_tool train ${TRAIN_FLAGS[*]} on the pinned fortunes corpus)",
 "val_loss":${losses%% *},"val_loss_bf16":${losses##* },"log":"model-train.csv"}
EOF

if [ "${MODEL_UPDATE:-}" = 1 ]; then
  cp "$OUT/gpt2-fortunes/config.json" "$OUT/gpt2-fortunes/model.safetensors" "$COMMITTED/"
  cp "$OUT/model-train.csv" "$OUT/model-train.json" bench/results/
  echo "copied into $COMMITTED/ and bench/results/ (model-train.csv, model-train.json)"
  exit 0
fi
for f in config.json model.safetensors; do
  if ! cmp -s "$OUT/gpt2-fortunes/$f" "$COMMITTED/$f"; then
    echo "make model: $OUT/gpt2-fortunes/$f differs from the committed $COMMITTED/$f" >&2
    exit 1
  fi
done
echo "make model: $OUT/gpt2-fortunes is the committed model bit for bit (config.json, model.safetensors)"
