#!/usr/bin/python3
"""PyTorch's autograd as an independent peer for weights_tool train's step.

Reads a tiny GPT-2 and one batch (tests/data/train/step_input.safetensors:
every parameter F32 under its Hugging Face name, "tokens" and "targets" I32
(B, T), the shape and the optimizer's settings in __metadata__), builds
GPT-2 from torch's own operators in float64 (layer_norm, a causal softmax,
gelu(approximate="tanh"), cross_entropy, the tied head), and writes
tests/data/train/step_golden.safetensors (all F64):
  loss (1), grad_norm (1)     the mean cross-entropy and the global gradient norm
  grad.NAME                   autograd's gradient of every parameter
  after.NAME                  the parameter after the global norm clip and one
                              torch.optim.AdamW step
The clip is done by hand as train/optimizer.h defines it (scale = clip /
norm when norm > clip; torch's clip_grad_norm_ adds 1e-6 to the norm). AdamW
has two groups: decay for the rank-2 tensors (embeddings and matrices), none
for biases and layer-norm gains.

tests/train/torch_golden_test.cc compares the trainer (double and float
paths) with the golden file; make test reads the committed files and needs
no torch. Regenerate (Debian: apt-get install python3-torch):
  make train-golden
or by hand:
  /usr/bin/python3 tests/train/torch_train_step.py            # golden from the input
  /usr/bin/python3 tests/train/torch_train_step.py --new-input  # a new input, then its golden

The safetensors reader and writer here are json + struct only (no
safetensors package).
"""
import argparse
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "train")
INPUT = os.path.join(DATA, "step_input.safetensors")
GOLDEN = os.path.join(DATA, "step_golden.safetensors")

DTYPES = {"F32": ("f", torch.float32), "F64": ("d", torch.float64), "I32": ("i", torch.int32)}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n :]
    tensors = {}
    for name, info in header.items():
        code, dtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = (end - begin) // struct.calcsize(code)
        values = struct.unpack("<%d%s" % (count, code), data[begin:end])
        tensors[name] = torch.tensor(values, dtype=dtype).reshape(info["shape"])
    return tensors, meta


def write_safetensors(path, tensors, meta):
    header, chunks, offset = {"__metadata__": meta}, [], 0
    codes = {torch.float32: ("F32", "f"), torch.float64: ("F64", "d"), torch.int32: ("I32", "i")}
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dtype, code = codes[t.dtype]
        raw = struct.pack("<%d%s" % (t.numel(), code), *t.flatten().tolist())
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    os.replace(path + ".tmp", path)


def parameter_names(n_layer):
    names = ["wte.weight", "wpe.weight"]
    for l in range(n_layer):
        for part in ["ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"]:
            names += ["h.%d.%s.weight" % (l, part), "h.%d.%s.bias" % (l, part)]
    return names + ["ln_f.weight", "ln_f.bias"]


def loss_of(p, tokens, targets, m):
    B, T = tokens.shape
    C, H, eps = int(m["n_embd"]), int(m["n_head"]), float(m["layer_norm_epsilon"])
    hd = C // H
    x = p["wte.weight"][tokens.long()] + p["wpe.weight"][:T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(int(m["n_layer"])):
        w = lambda name: p["h.%d.%s" % (l, name)]
        h = F.layer_norm(x, (C,), w("ln_1.weight"), w("ln_1.bias"), eps)
        q, k, v = (h @ w("attn.c_attn.weight") + w("attn.c_attn.bias")).split(C, dim=2)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ w("attn.c_proj.weight") + w("attn.c_proj.bias")
        h = F.layer_norm(x, (C,), w("ln_2.weight"), w("ln_2.bias"), eps)
        h = F.gelu(h @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"), approximate="tanh")
        x = x + h @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias")
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps)
    logits = x @ p["wte.weight"].T
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1).long())


def new_input():
    """A random tiny model and batch (parameters far from GPT-2's init)."""
    m = {"n_layer": 2, "n_head": 2, "n_embd": 16, "n_ctx": 16, "vocab_size": 64, "layer_norm_epsilon": 1e-5,
         "batch": 2, "seq": 8, "lr": 1e-2, "weight_decay": 0.1, "clip": 0.5, "beta1": 0.9, "beta2": 0.95,
         "eps": 1e-8}
    C, V, P = m["n_embd"], m["vocab_size"], m["n_ctx"]
    shapes = {"wte.weight": [V, C], "wpe.weight": [P, C], "ln_f.weight": [C], "ln_f.bias": [C]}
    for l in range(m["n_layer"]):
        for part, (i, o) in {"attn.c_attn": (C, 3 * C), "attn.c_proj": (C, C), "mlp.c_fc": (C, 4 * C),
                             "mlp.c_proj": (4 * C, C)}.items():
            shapes["h.%d.%s.weight" % (l, part)] = [i, o]
            shapes["h.%d.%s.bias" % (l, part)] = [o]
        for ln in ("ln_1", "ln_2"):
            shapes["h.%d.%s.weight" % (l, ln)] = [C]
            shapes["h.%d.%s.bias" % (l, ln)] = [C]
    gen = torch.Generator().manual_seed(20261206)
    tensors = {}
    for name, shape in shapes.items():
        t = torch.randn(shape, generator=gen, dtype=torch.float64) * (0.3 if len(shape) == 2 else 0.2)
        if ".ln_" in "." + name and name.endswith(".weight"):
            t += 1.0
        tensors[name] = t.to(torch.float32)
    B, T = m["batch"], m["seq"]
    tensors["tokens"] = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int32)
    tensors["targets"] = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int32)
    write_safetensors(INPUT, tensors, {k: repr(v) for k, v in m.items()})


def golden():
    tensors, meta = read_safetensors(INPUT)
    m = {k: float(v) for k, v in meta.items()}
    names = parameter_names(int(m["n_layer"]))
    p = {n: tensors[n].to(torch.float64).requires_grad_(True) for n in names}
    loss = loss_of(p, tensors["tokens"], tensors["targets"], m)
    loss.backward()
    grads = {n: p[n].grad.detach().clone() for n in names}
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    assert norm > m["clip"], "the golden step should exercise the clip: norm %g, clip %g" % (norm, m["clip"])
    for n in names:
        p[n].grad.mul_(m["clip"] / norm)
    decay = [p[n] for n in names if p[n].dim() == 2]
    no_decay = [p[n] for n in names if p[n].dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": m["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=m["lr"], betas=(m["beta1"], m["beta2"]), eps=m["eps"])
    opt.step()
    out = {"loss": torch.tensor([float(loss)], dtype=torch.float64),
           "grad_norm": torch.tensor([norm], dtype=torch.float64)}
    for n in names:
        out["grad." + n] = grads[n]
        out["after." + n] = p[n].detach()
    write_safetensors(GOLDEN, out, {"torch": torch.__version__, "dtype": "float64"})
    print("loss %.12f, grad norm %.12f -> %s" % (float(loss), norm, os.path.relpath(GOLDEN)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--new-input", action="store_true", help="draw a new input file first")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    if args.new_input:
        new_input()
    golden()
