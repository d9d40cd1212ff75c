#!/usr/bin/python3
# ---------------------------------------------------------------------------
# PEER, not TokenWire code: the PyTorch reference point for bench/cpu_model.
# Copied unchanged (below this header) from the project's shared peers folder
# (peers/torch_gpt2_peer.py). Run only by bench/cpu_model/run.sh, never by the
# build or the tests. Fastest configuration on this machine (peers README):
#   apt-get install -y python3-torch libopenblas0-pthread
#   OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=2 \
#     /usr/bin/python3 torch_gpt2_peer.py --batches 1,8,32
# ---------------------------------------------------------------------------
"""GPT-2 124M-shaped forward pass in plain torch ops, RANDOM weights, float32, KV cache.

12 layers, d=768, 12 heads (head dim 64), vocab 50257, ctx 1024, tied lm_head (= wte^T),
pre-LN blocks, GELU(tanh), learned positions.  Weight layout as nn.Linear ([out, in]).

Measures (median of several runs, torch.set_num_threads(THREADS)):
  (i)   prefill of a 200-token prompt at batch 1 (logits for the last position only,
        which is all a server needs; the variant that computes all 200 rows is also timed),
  (ii)  one decode step at batch 1 with 200 tokens already in the cache,
  (iii) one decode step at batch 8 and 32 (each sequence has 200 tokens of context).

Usage:  /usr/bin/python3 gpt2_torch.py [--linear blas|mkldnn] [--threads 2] [--quick]
  --linear blas   : F.linear -> ATen addmm -> whatever libblas.so.3 is loaded
                    (Debian default: netlib reference BLAS; with LD_LIBRARY_PATH pointing to
                    an extracted libopenblas0-pthread: OpenBLAS 0.3.21)
  --linear mkldnn : weights pre-converted to oneDNN (MKL-DNN 2.6.3, bundled with this torch)
                    and multiplied with torch._C._nn.mkldnn_linear.
"""
import argparse, math, os, statistics, sys, time
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--linear", default="blas", choices=["blas", "mkldnn"])
p.add_argument("--threads", type=int, default=2)
p.add_argument("--quick", action="store_true", help="fewer repetitions (slow BLAS)")
p.add_argument("--batches", default="1,8,32")
p.add_argument("--layout", default="linear", choices=["linear", "conv1d"],
               help="linear: F.linear with W[out,in] (nn.Linear); conv1d: torch.addmm(b, x, W[in,out]) as HF GPT-2's Conv1D")
args = p.parse_args()

torch.set_num_threads(args.threads)
torch.manual_seed(0)
D, H, L, V, CTX = 768, 12, 12, 50257, 1024
HD = D // H
PROMPT = 200


def rnd(*shape, std=0.02):
    return torch.randn(*shape) * std


class Weights:
    def __init__(self):
        self.wte = rnd(V, D)
        self.wpe = rnd(CTX, D, std=0.01)
        self.layers = []
        for _ in range(L):
            self.layers.append(dict(
                ln1_w=torch.ones(D), ln1_b=torch.zeros(D),
                attn_w=rnd(3 * D, D), attn_b=torch.zeros(3 * D),
                proj_w=rnd(D, D), proj_b=torch.zeros(D),
                ln2_w=torch.ones(D), ln2_b=torch.zeros(D),
                fc_w=rnd(4 * D, D), fc_b=torch.zeros(4 * D),
                fc2_w=rnd(D, 4 * D), fc2_b=torch.zeros(D),
            ))
        self.lnf_w, self.lnf_b = torch.ones(D), torch.zeros(D)

    def nparams(self):
        n = self.wte.numel() + self.wpe.numel() + 2 * D
        for l in self.layers:
            n += sum(t.numel() for t in l.values())
        return n


W = Weights()
NPARAMS = W.nparams()

if args.linear == "mkldnn":
    # Pre-convert the weight matrices to oneDNN tensors once (a server would do this at load).
    for l in W.layers:
        for k in ("attn", "proj", "fc", "fc2"):
            l[k + "_wm"] = l[k + "_w"].to_mkldnn()
            l[k + "_bm"] = l[k + "_b"].to_mkldnn()
    W.wte_m = W.wte.to_mkldnn()

    def linear(x, l, k):
        shp = x.shape
        y = torch._C._nn.mkldnn_linear(x.reshape(-1, shp[-1]).to_mkldnn(), l[k + "_wm"], l[k + "_bm"]).to_dense()
        return y.view(*shp[:-1], y.shape[-1])

    def lm_head(x):
        shp = x.shape
        y = torch._C._nn.mkldnn_linear(x.reshape(-1, D).to_mkldnn(), W.wte_m, None).to_dense()
        return y.view(*shp[:-1], V)
elif args.layout == "conv1d":
    for l in W.layers:
        for k in ("attn", "proj", "fc", "fc2"):
            l[k + "_wt"] = l[k + "_w"].t().contiguous()   # [in, out], as HF Conv1D stores it
            del l[k + "_w"]

    def linear(x, l, k):
        shp = x.shape
        y = torch.addmm(l[k + "_b"], x.reshape(-1, shp[-1]), l[k + "_wt"])
        return y.view(*shp[:-1], y.shape[-1])

    def lm_head(x):
        return F.linear(x, W.wte)
else:
    def linear(x, l, k):
        return F.linear(x, l[k + "_w"], l[k + "_b"])

    def lm_head(x):
        return F.linear(x, W.wte)


class KVCache:
    def __init__(self, B):
        self.k = [torch.zeros(B, H, CTX, HD) for _ in range(L)]
        self.v = [torch.zeros(B, H, CTX, HD) for _ in range(L)]


def forward(idx, pos0, cache, all_logits=False):
    """idx: [B, T] token ids, positions pos0..pos0+T-1; writes K/V into cache; returns logits."""
    B, T = idx.shape
    x = W.wte[idx] + W.wpe[pos0:pos0 + T]
    end = pos0 + T
    if T > 1:
        # causal mask over the whole [pos0, end) x [0, end) window
        i = torch.arange(pos0, end).unsqueeze(1)
        j = torch.arange(0, end).unsqueeze(0)
        mask = torch.zeros(T, end).masked_fill(j > i, float("-inf"))
    for li, l in enumerate(W.layers):
        h = F.layer_norm(x, (D,), l["ln1_w"], l["ln1_b"])
        qkv = linear(h, l, "attn")                                   # [B, T, 3D]
        q, k, v = qkv.split(D, dim=2)
        q = q.view(B, T, H, HD).transpose(1, 2)                      # [B, H, T, HD]
        cache.k[li][:, :, pos0:end] = k.view(B, T, H, HD).transpose(1, 2)
        cache.v[li][:, :, pos0:end] = v.view(B, T, H, HD).transpose(1, 2)
        kk = cache.k[li][:, :, :end]
        vv = cache.v[li][:, :, :end]
        att = torch.matmul(q, kk.transpose(-2, -1)) * (1.0 / math.sqrt(HD))  # [B, H, T, end]
        if T > 1:
            att = att + mask
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, vv)                                    # [B, H, T, HD]
        y = y.transpose(1, 2).reshape(B, T, D)
        x = x + linear(y, l, "proj")
        h = F.layer_norm(x, (D,), l["ln2_w"], l["ln2_b"])
        h = F.gelu(linear(h, l, "fc"), approximate="tanh")
        x = x + linear(h, l, "fc2")
    x = F.layer_norm(x, (D,), W.lnf_w, W.lnf_b)
    if not all_logits:
        x = x[:, -1:, :]
    return lm_head(x)


def timeit(fn, reps, warm=1):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts), max(ts)


def main():
    print(f"torch {torch.__version__}  threads={torch.get_num_threads()}  linear={args.linear}  layout={args.layout}  "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}  "
          f"LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')}  "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '')}")
    try:
        blas = [l.split()[-1] for l in open(f"/proc/{os.getpid()}/maps") if "blas" in l or "dnnl" in l]
        print("mapped BLAS/oneDNN libs:", sorted(set(blas)))
    except Exception:
        pass
    print(f"params: {NPARAMS / 1e6:.2f} M  ({NPARAMS * 4 / 1e6:.1f} MB fp32, lm_head tied to wte)")
    q = args.quick
    with torch.inference_mode():
        # (i) prefill, batch 1, 200 tokens
        cache1 = KVCache(1)
        prompt = torch.randint(0, V, (1, PROMPT))
        logits = forward(prompt, 0, cache1)
        assert logits.shape == (1, 1, V) and torch.isfinite(logits).all()
        med, mn, mx = timeit(lambda: forward(prompt, 0, cache1).argmax(-1), 3 if q else 9)
        print(f"(i)  prefill 200 tok, B=1, last-pos logits: median {med*1e3:9.2f} ms  (min {mn*1e3:.2f}, max {mx*1e3:.2f})"
              f"  -> {PROMPT/med:8.1f} prompt tok/s")
        med, mn, mx = timeit(lambda: forward(prompt, 0, cache1, all_logits=True).argmax(-1), 2 if q else 5)
        print(f"     prefill 200 tok, B=1, ALL 200 logits rows: median {med*1e3:9.2f} ms  (min {mn*1e3:.2f}, max {mx*1e3:.2f})")
        # (ii)/(iii) decode step at context 200 (cache positions 0..199 filled; new token at 200)
        for B in [int(b) for b in args.batches.split(",")]:
            cache = KVCache(B) if B > 1 else cache1
            if B > 1:
                for li in range(L):
                    cache.k[li][:, :, :PROMPT] = torch.randn(B, H, PROMPT, HD)
                    cache.v[li][:, :, :PROMPT] = torch.randn(B, H, PROMPT, HD)
            tok = torch.randint(0, V, (B, 1))
            out = forward(tok, PROMPT, cache)
            assert out.shape == (B, 1, V) and torch.isfinite(out).all()
            reps = (5 if q else 21) if B <= 8 else (3 if q else 11)
            med, mn, mx = timeit(lambda: forward(tok, PROMPT, cache).argmax(-1), reps, warm=2)
            print(f"(ii/iii) decode step B={B:2d}, ctx 200: median {med*1e3:9.2f} ms  (min {mn*1e3:.2f}, max {mx*1e3:.2f})"
                  f"  -> {B/med:8.1f} tok/s aggregate, {1/med:6.1f} tok/s per stream")
            del cache


main()
