#!/usr/bin/env python3
"""Summarises an A/B of `flashtune bench` runs of two builds over the same variants.

The input is the log a device call writes: each run preceded by a header line
`== pass P BUILD B<batch> x <keys> LABEL` (LABEL: one word, e.g. the layout, or d64c1 for a
prefill head dim and mask), then `flashtune bench`'s table. Prints, per shape, label:dtype (the
variant's dtype, e.g. d64c0:bf16) and variant tile (the URI between the family's dtype/head-dim
prefix and the K/V layout or mask suffix), each build's medians over the passes and new / old of
their means.

usage: bench/bench_ab_summary.py BENCH_LOG OLD_BUILD NEW_BUILD
"""
import collections
import re
import sys


def main(path, old, new):
    runs = collections.defaultdict(list)
    key = None
    for line in open(path):
        m = re.match(r"== pass (\d+) (\S+) (B\d+ x \d+) (\S+)", line)
        if m:
            key = m.groups()
            continue
        m = re.match(r"[a-z0-9_]+?_(bf16|f16)_d\d+_(\S+?)(?:_kv\d)?_(?:full|causal)\s+ok\s+([\d.]+)", line)
        if m and key:  # the dtype joins the label: one header may time both dtypes' variants
            runs[(key[2], f"{key[3]}:{m.group(1)}", m.group(2), key[1])].append(float(m.group(3)))
    print(f"shape label tile: {old} us / {new} us (each pass), new/old of the means")
    for shape, layout, tile in sorted({k[:3] for k in runs}):
        a, b = runs.get((shape, layout, tile, old), []), runs.get((shape, layout, tile, new), [])
        if a and b:
            ratio = (sum(b) / len(b)) / (sum(a) / len(a))
            print(f"{shape:10s} {layout:12s} {tile:22s} {'/'.join(f'{x:.1f}' for x in a):>13s} "
                  f"{'/'.join(f'{x:.1f}' for x in b):>13s}  {ratio:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
