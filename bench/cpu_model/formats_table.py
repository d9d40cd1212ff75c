#!/usr/bin/env python3
"""Prints the weight-formats table of a CPU model bench result (markdown).

  python3 bench/cpu_model/formats_table.py bench/results/cpu_model-DATE.json

Reads the "variants" that build/bench_cpu_model --weights ... --isa ...
wrote (run.sh keeps them under "tokenwire"): for every (kernel level, weight
format) pair, prefill 200 tokens and decode at batch 1, 8 and 32 (medians),
each beside its floor (max(FLOPs at the level's FMA peak, (the format's
weight bytes + K/V bytes) at the read bandwidth), measured in the same run), the share of
the floor's speed reached, and the speed over f32 at the same level.
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: formats_table.py RESULT.json")
    doc = json.load(open(sys.argv[1]))
    ours = doc.get("tokenwire", doc)
    variants = ours.get("variants", [])
    if not variants:
        sys.exit("no variants in " + sys.argv[1] + " (run the bench with --weights / --isa)")
    avx2 = ours.get("fma_peak_avx2_flops")
    print(f"Floors measured in the run: read {ours['read_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, "
          f"FMA peak {ours['fma_peak_flops'] / 1e9:.0f} GFLOP/s"
          + (f" (AVX2 FMAs: {avx2 / 1e9:.0f} GFLOP/s, the floor of the avx2 rows)" if avx2 else "")
          + f"; threads {ours['threads']}; load average before: {doc.get('loadavg_before_ours', 'n/a')}")
    print()
    print("| level | weights | packed MB | prefill 200: ms (floor) | vs f32 | "
          "B=1: tok/s (floor) | of floor | vs f32 | B=8: tok/s (floor) | of floor | vs f32 | "
          "B=32: tok/s (floor) | of floor | vs f32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v in variants:
        base = next((x for x in variants if x["isa"] == v["isa"] and x["weights"] == "f32"), None)
        p = v["prefill"]
        cells = [v["isa"], v["weights"], f"{v['packed_bytes'] / 1e6:.0f}",
                 f"{p['median_ms']:.0f} ({p['floor_ms']:.0f})",
                 f"{base['prefill']['median_ms'] / p['median_ms']:.2f}x" if base else "n/a"]
        for d in v["decode"]:
            b = d["batch"]
            bd = next(x for x in base["decode"] if x["batch"] == b) if base else None
            cells += [f"{d['tok_per_s']:.1f} ({b / d['floor_ms'] * 1e3:.0f})",
                      f"{d['floor_ms'] / d['median_ms'] * 100:.0f}%",
                      f"{d['tok_per_s'] / bd['tok_per_s']:.2f}x" if bd else "n/a"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
