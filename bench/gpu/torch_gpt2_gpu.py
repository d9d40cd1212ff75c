#!/usr/bin/env python3
"""The PyTorch peer of the GPU bench: GPT-2 (124M shape) in plain torch on the GPU.

Not TokenWire code: the reference point bench/gpu/run.sh measures beside the
CUDA runner (build/cuda/bench/gpu_bench --torch FILE merges the results).

The model: 12 layers, d=768, 12 heads, vocab 50257, tied LM head, pre-LN,
GELU(tanh), random weights, float32 on the GPU. A static KV cache
(L, B, H, S, 64) with S = context + steps + 8 slots, attention over all S
slots with a mask beyond each sequence's position (static shapes, so
torch.compile's CUDA graphs apply). A step's work is the same as the CUDA
runner's: the forward pass, the greedy choice on the GPU, and only the token
ids copied to the host.

Configurations: eager fp32, eager tf32 (torch.backends.cuda.matmul.allow_tf32),
and torch.compile(mode="reduce-overhead") fp32 and tf32 (compiled for
batches 1 and 32 only, within --budget-s: compiling takes long).
Measured: prefill of a 200-token prompt (B = 1; the logits of the last
position) and one decode step at B = 1, 8, 32 with `context` tokens cached;
wall clock around each call (it ends with the ids on the host), median of
the steps after the warm-up.

  python3 torch_gpt2_gpu.py --out torch.json [--context 200] [--steps 40] [--budget-s 240]
  python3 torch_gpt2_gpu.py --device cpu --layers 2 --dim 64 --steps 5   (a quick check of the script)
"""
import argparse, json, math, statistics, sys, time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--out", default="torch.json")
p.add_argument("--device", default="cuda")
p.add_argument("--context", type=int, default=200)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--budget-s", type=float, default=240.0)
p.add_argument("--layers", type=int, default=12)
p.add_argument("--dim", type=int, default=768)
p.add_argument("--no-compile", action="store_true")
p.add_argument("--no-eager", action="store_true", help="the compiled configurations only")
args = p.parse_args()

dev = torch.device(args.device)
L, D, V, CTX = args.layers, args.dim, 50257, 1024
H = max(1, D // 64)
HD = D // H
S = args.context + args.steps + 8
torch.manual_seed(0)


def rnd(*shape, std=0.02):
    return (torch.randn(*shape) * std).to(dev)


W = dict(wte=rnd(V, D), wpe=rnd(CTX, D, std=0.01), lnf_w=torch.ones(D, device=dev), lnf_b=torch.zeros(D, device=dev))
LAYERS = []
for _ in range(L):
    LAYERS.append(dict(ln1_w=torch.ones(D, device=dev), ln1_b=torch.zeros(D, device=dev),
                       attn_w=rnd(3 * D, D), attn_b=torch.zeros(3 * D, device=dev),
                       proj_w=rnd(D, D), proj_b=torch.zeros(D, device=dev),
                       ln2_w=torch.ones(D, device=dev), ln2_b=torch.zeros(D, device=dev),
                       fc_w=rnd(4 * D, D), fc_b=torch.zeros(4 * D, device=dev),
                       fc2_w=rnd(D, 4 * D), fc2_b=torch.zeros(D, device=dev)))


def attend(q, k, v, mask):
    """q (B, H, T, HD), k/v (B, H, S, HD), mask (B, 1, T, S) bool."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # an older torch (a CPU check of the script)
    return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v


def forward(tokens, pos, k_cache, v_cache):
    """tokens (B, T) at positions pos (B, T); caches (L, B, H, S, HD) written in place.
    Returns the ids of the greedy next token after each row's last position (B)."""
    B, T = tokens.shape
    x = W["wte"][tokens] + W["wpe"][pos]
    slots = torch.arange(S, device=dev)
    # (B, 1, T, S): a query at position p sees slots 0..p.
    mask = (slots.view(1, 1, 1, S) <= pos.view(B, 1, T, 1))
    bidx = torch.arange(B, device=dev).view(B, 1)
    for l, w in enumerate(LAYERS):
        h = F.layer_norm(x, (D,), w["ln1_w"], w["ln1_b"], 1e-5)
        qkv = F.linear(h, w["attn_w"], w["attn_b"]).view(B, T, 3, H, HD)
        q, k, v = qkv.unbind(2)
        k_cache[l][bidx, :, pos] = k
        v_cache[l][bidx, :, pos] = v
        att = attend(q.transpose(1, 2), k_cache[l], v_cache[l], mask)
        x = x + F.linear(att.transpose(1, 2).reshape(B, T, D), w["proj_w"], w["proj_b"])
        h = F.layer_norm(x, (D,), w["ln2_w"], w["ln2_b"], 1e-5)
        x = x + F.linear(F.gelu(F.linear(h, w["fc_w"], w["fc_b"]), approximate="tanh"), w["fc2_w"], w["fc2_b"])
    h = F.layer_norm(x[:, -1], (D,), W["lnf_w"], W["lnf_b"], 1e-5)
    return F.linear(h, W["wte"]).argmax(-1)


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


def caches(B):
    k, v = torch.zeros(L, B, H, S, HD, device=dev), torch.zeros(L, B, H, S, HD, device=dev)
    # Static addresses: a compiled step may write the caches in place and
    # still be replayed as a CUDA graph (as Hugging Face's static cache does).
    mark = getattr(getattr(torch, "_dynamo", None), "mark_static_address", None)
    if mark is not None:
        mark(k)
        mark(v)
    return k, v


def measure(fn, label):
    out = {"name": label, "decode_ms": {}}
    # Prefill, B = 1, a 200-token prompt (eager shapes: compiled configs use it as is).
    T = min(200, args.context)
    k, v = caches(1)
    toks = torch.randint(0, V, (1, T), device=dev)
    pos = torch.arange(T, device=dev).view(1, T)
    times = []
    for rep in range(8):
        t0 = time.perf_counter()
        forward(toks, pos, k, v).cpu()
        times.append((time.perf_counter() - t0) * 1e3)
    out["prefill_ms"] = statistics.median(times[2:])
    for B in fn["batches"]:
        k, v = caches(B)
        ctx = torch.randint(0, V, (B, args.context), device=dev)
        forward(ctx, torch.arange(args.context, device=dev).expand(B, -1).contiguous(), k, v).cpu()
        last = torch.randint(0, V, (B, 1), device=dev)
        step = fn["step"]
        times = []
        for s in range(args.steps):
            pos = torch.full((B, 1), args.context + s, device=dev, dtype=torch.long)
            t0 = time.perf_counter()
            if fn.get("graphs"):
                # A compiled step replays a CUDA graph whose output buffer the
                # next replay overwrites: each step is marked as new, and its
                # ids are copied out before the next one (a 32-element copy on
                # the GPU, part of the step's time).
                torch.compiler.cudagraph_mark_step_begin()
                ids = step(last, pos, k, v).clone()
            else:
                ids = step(last, pos, k, v)
            host = ids.cpu()
            times.append((time.perf_counter() - t0) * 1e3)
            last = ids.view(B, 1)
        out["decode_ms"][str(B)] = statistics.median(times[3:]) if len(times) > 3 else statistics.median(times)
        print(f"{label}: B={B} decode {out['decode_ms'][str(B)]:.3f} ms", flush=True)
    print(f"{label}: prefill {out['prefill_ms']:.3f} ms", flush=True)
    return out


results = {"device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
           "torch": torch.__version__, "context": args.context, "steps": args.steps, "configs": [], "skipped": []}
start = time.perf_counter()
with torch.inference_mode():
    for tf32 in (() if args.no_eager else (False, True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        name = "eager " + ("tf32" if tf32 else "fp32")
        results["configs"].append(measure({"step": forward, "batches": [1, 8, 32]}, name))
    if not args.no_compile:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            name = "compiled reduce-overhead " + ("tf32" if tf32 else "fp32")
            if time.perf_counter() - start > args.budget_s:
                results["skipped"].append(name + " (over --budget-s)")
                continue
            try:
                compiled = torch.compile(forward, mode="reduce-overhead", fullgraph=True, dynamic=False)
                results["configs"].append(measure({"step": compiled, "batches": [1, 32], "graphs": True}, name))
            except Exception as e:  # a compile failure is a result too
                results["skipped"].append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
results["seconds"] = time.perf_counter() - start
with open(args.out, "w") as f:
    json.dump(results, f, indent=1)
print(json.dumps(results, indent=1))
