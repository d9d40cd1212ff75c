#!/usr/bin/env python3
"""Writes a GPT-2-small-shaped model with random weights in the legacy ggml
file format that ggml's examples/gpt-2 programs load (gpt-2-backend,
gpt-2-batched, gpt-2-quantize), for the ggml peer of the CPU model bench.

    /usr/bin/python3 bench/cpu_model/ggml_gpt2_model.py --ftype f32|f16 --out FILE
    /usr/bin/python3 bench/cpu_model/ggml_gpt2_model.py --prompt   # prints the prompt text

The format (examples/gpt-2/main-*.cpp, gpt2_model_load): int32 magic
0x67676d6c ("ggml"); int32 hparams n_vocab, n_ctx, n_embd, n_head, n_layer,
ftype (0 = all f32, 1 = f16 matrices); int32 n_vocab, then per token int32
length + raw bytes; then tensors until EOF, each int32 n_dims, name length,
type (0 F32, 1 F16), n_dims int32 dims with the fastest (ggml ne[0]) first,
the name, the data. Matrices (wte and the four per-layer weights) take the
file's ftype; biases, layer norms and wpe stay f32. No lm_head tensor: GPT-2
ties it to wte, and the loader then uses wte as the head. Q8_0 is not
written here: ggml's own gpt-2-quantize makes it from the f32 file.

Weights: normal, std 0.02 (numpy, fixed seed); layer norms gamma 1, beta 0;
biases 0. The vocabulary is the real GPT-2 one (src/tokenizer/data/
encoder.json, byte-decoded as ggml's convert-h5-to-ggml.py does), so the
example's tokenizer works on it; --prompt prints a text that this tokenizer
(greedy longest match per regex word) splits into exactly 200 tokens: 200
distinct vocabulary entries of the form " <letters>", each one whole word.
"""
import argparse
import json
import os
import re
import struct
import sys

import numpy as np

N_VOCAB, N_CTX, N_EMBD, N_HEAD, N_LAYER = 50257, 1024, 768, 12, 12
PROMPT_TOKENS = 200
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ENCODER = os.path.join(REPO, "src", "tokenizer", "data", "encoder.json")


def bytes_to_unicode():
    # GPT-2's byte <-> unicode map (the same table as ggml's convert script).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def vocab():
    enc = json.load(open(ENCODER, encoding="utf-8"))
    assert len(enc) == N_VOCAB, len(enc)
    dec = {v: k for k, v in bytes_to_unicode().items()}
    words = [None] * N_VOCAB
    for k, i in enc.items():
        words[i] = bytes(dec[c] for c in k)
    assert all(w is not None for w in words)
    return words


def prompt_ids(words):
    # " <lowercase letters>" entries (one regex word each: ' ?[[:alpha:]]+'),
    # 3+ letters, spread over the vocabulary, the first 200 in a fixed stride.
    cand = [i for i, w in enumerate(words) if re.fullmatch(rb" [a-z]{3,}", w)]
    step = len(cand) // PROMPT_TOKENS
    ids = [cand[k * step] for k in range(PROMPT_TOKENS)]
    assert len(set(ids)) == PROMPT_TOKENS
    return ids


def write_model(path, ftype):
    words = vocab()
    rng = np.random.default_rng(20251202)
    wdt, wcode = (np.float32, 0) if ftype == "f32" else (np.float16, 1)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<I", 0x67676D6C))
        f.write(struct.pack("<6i", N_VOCAB, N_CTX, N_EMBD, N_HEAD, N_LAYER, wcode))
        f.write(struct.pack("<i", N_VOCAB))
        for w in words:
            f.write(struct.pack("<I", len(w)))
            f.write(w)

        def tensor(name, shape, kind):
            # shape in numpy order (slowest first); the file lists ne[0] first.
            if kind == "w":
                data = (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)).astype(wdt)
                code = wcode
            else:
                data = (np.ones if kind == "one" else np.zeros)(shape, dtype=np.float32)
                if kind == "pos":
                    data = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
                code = 0
            nb = name.encode()
            f.write(struct.pack("<3i", len(shape), len(nb), code))
            for d in reversed(shape):
                f.write(struct.pack("<i", d))
            f.write(nb)
            f.write(np.ascontiguousarray(data).tobytes())

        E = N_EMBD
        tensor("model/ln_f/g", (E,), "one")
        tensor("model/ln_f/b", (E,), "zero")
        tensor("model/wte", (N_VOCAB, E), "w")
        tensor("model/wpe", (N_CTX, E), "pos")  # f32 in every ftype (loader)
        for i in range(N_LAYER):
            p = f"model/h{i}/"
            tensor(p + "ln_1/g", (E,), "one")
            tensor(p + "ln_1/b", (E,), "zero")
            tensor(p + "ln_2/g", (E,), "one")
            tensor(p + "ln_2/b", (E,), "zero")
            tensor(p + "attn/c_attn/w", (3 * E, E), "w")      # ne = [768, 2304]
            tensor(p + "attn/c_attn/b", (3 * E,), "zero")
            tensor(p + "attn/c_proj/w", (E, E), "w")
            tensor(p + "attn/c_proj/b", (E,), "zero")
            tensor(p + "mlp/c_fc/w", (4 * E, E), "w")         # ne = [768, 3072]
            tensor(p + "mlp/c_fc/b", (4 * E,), "zero")
            tensor(p + "mlp/c_proj/w", (E, 4 * E), "w")       # ne = [3072, 768]
            tensor(p + "mlp/c_proj/b", (E,), "zero")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ftype", choices=["f32", "f16"])
    ap.add_argument("--out")
    ap.add_argument("--prompt", action="store_true", help="print the 200-token prompt text and exit")
    a = ap.parse_args()
    if a.prompt:
        words = vocab()
        sys.stdout.write(b"".join(words[i] for i in prompt_ids(words)).decode())
        return
    if not a.ftype or not a.out:
        ap.error("--ftype and --out are required (or --prompt)")
    write_model(a.out, a.ftype)


if __name__ == "__main__":
    main()
