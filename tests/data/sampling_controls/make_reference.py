#!/usr/bin/env python3
"""The sampling controls' reference: a float64 model of each logits
processor, written from vLLM's definitions (vllm/sampling_params.py and its
v1 sampler: logit_bias and min_tokens, then the repetition, frequency and
presence penalties, then temperature, min_p, top-k and top-p), independent of
TokenWire's C++ code. It writes reference.json, which
tests/model/sampling_controls_test.cc checks the CPU path against.

    /usr/bin/python3 tests/data/sampling_controls/make_reference.py

The logits are seeded random rows (normal * 3, a few ties, one large value,
a near-flat row), rounded to float32, as a model's would be; the cases are
fixed below. Plain Python (math.fsum, no numpy). Deterministic: the same
file every run.
"""
import json
import math
import os
import random
import struct

V = 512
EOS = 511
rng = random.Random(20261204)


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def make_rows():
    rows = []
    for r in range(4):
        x = [f32(rng.gauss(0.0, 3.0)) for _ in range(V)]
        if r == 1:
            for i in range(0, V, 37):
                x[i] = x[5]  # ties
        if r == 2:
            x[300] = 25.0  # one dominant id
        if r == 3:
            x = [f32(v * 0.2) for v in x]  # near flat
        rows.append(x)
    return rows


def isfinite(v):
    return not (math.isinf(v) or math.isnan(v))


def processed(x32, c):
    """logit_bias and min_tokens, then the penalties (vLLM's order)."""
    x = list(x32)
    out = c["output"]
    for k, b in c.get("logit_bias", {}).items():
        x[int(k)] += b
    if len(out) < c.get("min_tokens", 0):
        held = set(c.get("stop_token_ids", []))
        if not c.get("ignore_eos", False):
            held.add(EOS)
        for i in held:
            x[i] = -math.inf
    rep = c.get("repetition_penalty", 1.0)
    if rep != 1.0:
        seen = set(c["prompt"]) | set(out)
        for i in seen:
            x[i] = x[i] / rep if x[i] > 0 else x[i] * rep
    counts = [0] * V
    for i in out:
        counts[i] += 1
    for i in range(V):
        x[i] -= c.get("frequency_penalty", 0.0) * counts[i]
        x[i] -= c.get("presence_penalty", 0.0) * (1 if counts[i] > 0 else 0)
    return x


def log_softmax(z):
    finite = [v for v in z if isfinite(v)]
    m = max(finite)
    lz = m + math.log(math.fsum(math.exp(v - m) for v in finite))
    return [v - lz for v in z]


def order(x):
    # larger logit first, then lower id
    return sorted(range(V), key=lambda i: (-x[i], i))


def kept_ids(x, c):
    t = c["temperature"]
    lp = log_softmax([v / t for v in x])
    p = [math.exp(v) for v in lp]
    ordered = [i for i in order(x) if isfinite(x[i])]
    keep = ordered
    if c.get("min_p", 0.0) > 0:
        keep = [i for i in keep if p[i] >= c["min_p"] * p[ordered[0]]]
    if c.get("top_k", 0) > 0:
        keep = keep[: c["top_k"]]
    if c.get("top_p", 1.0) < 1.0:
        mass = sum(p[i] for i in keep)
        acc, cut = 0.0, []
        for i in keep:
            cut.append(i)
            acc += p[i]
            if acc >= c["top_p"] * mass:
                break
        keep = cut
    return keep, p


def draw(keep, p, u):
    """Inverse CDF in id order over the kept ids, and u's distance to the
    nearest boundary (as a fraction of the kept mass)."""
    ids = sorted(keep)
    total = math.fsum(p[i] for i in ids)
    cdf, acc = [], 0.0
    for i in ids:
        acc += p[i]
        cdf.append(acc / total)
    j = next((k for k, b in enumerate(cdf) if b > u), len(ids) - 1)
    margin = min([abs(u - b) for b in cdf[:-1]] + [1.0])
    return ids[j], margin


CASES = [
    dict(row=0, temperature=0.0),
    dict(row=0, temperature=0.0, logit_bias={"17": 100.0}),
    dict(row=0, temperature=1.0, logit_bias={"17": -100.0, "200": 7.5, "3": -2.25}),
    dict(row=1, temperature=0.7, repetition_penalty=1.3, prompt=[5, 6, 7, 37, 74], output=[5, 9, 9, 100]),
    dict(row=1, temperature=0.0, repetition_penalty=2.0, prompt=[], output=[]),
    dict(row=2, temperature=1.0, frequency_penalty=0.8, presence_penalty=-0.5, output=[300, 300, 300, 12, 12, 4]),
    dict(row=2, temperature=1.0, presence_penalty=2.0, frequency_penalty=2.0, output=[300] * 9),
    dict(row=0, temperature=1.2, min_p=0.05),
    dict(row=3, temperature=0.8, min_p=0.3, top_k=50, top_p=0.9),
    dict(row=1, temperature=1.0, min_tokens=4, stop_token_ids=[10, 20], output=[1, 2], logit_bias={"10": 50.0}),
    dict(row=1, temperature=1.0, min_tokens=4, stop_token_ids=[10, 20], output=[1, 2, 3, 4], logit_bias={"10": 50.0}),
    dict(row=2, temperature=0.0, min_tokens=2, ignore_eos=True, output=[], logit_bias={str(EOS): 60.0}),
    dict(row=2, temperature=0.0, min_tokens=2, output=[], logit_bias={str(EOS): 60.0}),
    dict(row=3, temperature=0.5, top_k=7, repetition_penalty=0.8, presence_penalty=1.0, frequency_penalty=-0.3,
         prompt=[1, 2, 3], output=[3, 3, 8], logit_bias={"100": 3.0, "101": -3.0}, min_p=0.02, top_p=0.95),
]
UNIFORMS = [0.0, 0.013, 0.25, 0.5, 0.61803, 0.75, 0.9, 0.999]


def main():
    rows = make_rows()
    out_cases = []
    for c in CASES:
        c = dict(c)
        c.setdefault("prompt", [])
        c.setdefault("output", [])
        x = processed(rows[c["row"]], c)
        t = c["temperature"]
        lp = log_softmax([v / (t if t > 0 else 1.0) for v in x])
        top = order(x)[:20]
        entry = dict(c)
        entry["processed"] = [v if isfinite(v) else None for v in x]
        entry["top_ids"] = top
        entry["top_logprobs"] = [float(lp[i]) for i in top]
        if t > 0:
            keep, p = kept_ids(x, c)
            entry["kept"] = sorted(keep)
            entry["draws"] = [dict(u=u, id=d, margin=m) for u in UNIFORMS for d, m in [draw(keep, p, u)]]
        else:
            entry["greedy"] = top[0]
        out_cases.append(entry)
    doc = dict(
        about="tests/data/sampling_controls/make_reference.py: float64 logits processors (vLLM's order) on float32 rows",
        vocab=V,
        eos=EOS,
        rows=rows,
        cases=out_cases,
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, len(out_cases), "cases")


if __name__ == "__main__":
    main()
