#!/usr/bin/env python3
"""Where a kernel's executed instructions and stall samples lie, from Nsight Compute's SASS page.

Input: the CSV of `ncu -i REPORT --page source --csv --print-source sass --kernel-name K` (the
report collected with --section SourceCounters). A kernel's SASS holds every path; this reads
which of it ran. For one CSV it prints the totals, the warps (the entry instruction's count), and
each run of consecutive executed instructions: its index range, static length, instructions
executed per warp and stall samples, with the first instruction. For two CSVs (A then B, e.g.
a dense and a paged build of one tile) it prints both totals and the opcodes whose executed
count per warp differs most (B - A).

usage: ncu_source_blocks.py A.csv [B.csv] [--top 15] [--min-per-warp 1]
"""
import argparse
import collections
import csv
import re
import sys

PREDICATE = re.compile(r"^@!?U?P[T\d]+\s+")


def load(path):
    """[(source text, executed count, stall samples)] in address order, from an ncu source CSV
    (a title row naming the kernel may come first; the header row holds "Source")."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r), None)
    if head is None:
        raise SystemExit(f"{path}: no header with 'Source' and 'Instructions Executed' (ncu --page source --csv)")
    cols = rows[head]
    src, ex = cols.index("Source"), cols.index("Instructions Executed")
    st = cols.index("Warp Stall Sampling (All Samples)") if "Warp Stall Sampling (All Samples)" in cols else None
    out = []
    for r in rows[head + 1:]:
        if len(r) <= max(src, ex):
            continue
        try:
            executed = int(float(r[ex].replace(",", "") or 0))
            samples = int(float(r[st].replace(",", "") or 0)) if st is not None else 0
        except ValueError:
            continue
        out.append((r[src].strip(), executed, samples))
    return out


def opcode(text):
    return PREDICATE.sub("", text).split(" ")[0] if text else ""


def warps(insns):
    """The warps that ran the kernel: how many times its first instruction executed."""
    return next((ex for _, ex, _ in insns if ex), 0)


def blocks(insns, min_per_warp=1.0):
    """Runs of consecutive executed instructions: dicts first, last (indices), static,
    per_warp (executed / warps), samples, head (the first instruction's text)."""
    w = max(1, warps(insns))
    out, cur = [], None
    for i, (text, ex, st) in enumerate(insns):
        if ex:
            if cur is None:
                cur = {"first": i, "last": i, "static": 0, "executed": 0, "samples": 0, "head": text}
            cur["last"] = i
            cur["static"] += 1
            cur["executed"] += ex
            cur["samples"] += st
        elif cur is not None:
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
    for b in out:
        b["per_warp"] = b.pop("executed") / w
    return [b for b in out if b["per_warp"] >= min_per_warp]


def by_opcode(insns):
    """{opcode: instructions executed per warp}."""
    w = max(1, warps(insns))
    counts = collections.Counter()
    for text, ex, _ in insns:
        if ex:
            counts[opcode(text)] += ex
    return {k: v / w for k, v in counts.items()}


def summary(insns):
    return {"warps": warps(insns), "executed": sum(ex for _, ex, _ in insns),
            "samples": sum(st for _, _, st in insns), "static": len(insns)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="one or two ncu source-page CSVs")
    ap.add_argument("--top", type=int, default=15, help="opcodes listed in a comparison")
    ap.add_argument("--min-per-warp", type=float, default=1.0, help="hide runs executed less often per warp")
    a = ap.parse_args(argv)
    if len(a.csv) > 2:
        ap.error("one or two CSVs")
    loaded = [load(p) for p in a.csv]
    for path, insns in zip(a.csv, loaded):
        s = summary(insns)
        print(f"{path}: {s['static']} instructions, {s['warps']} warps, {s['executed']} executed "
              f"({s['executed'] / max(1, s['warps']):.1f} a warp), {s['samples']} stall samples")
        if len(loaded) == 1:
            for b in blocks(insns, a.min_per_warp):
                print(f"  {b['first']:5d}-{b['last']:5d} static {b['static']:4d} per warp {b['per_warp']:7.1f} "
                      f"samples {b['samples']:5d}  {b['head'][:60]}")
    if len(loaded) == 2:
        ops_a, ops_b = by_opcode(loaded[0]), by_opcode(loaded[1])
        diff = sorted(((ops_b.get(k, 0.0) - ops_a.get(k, 0.0), k) for k in set(ops_a) | set(ops_b)),
                      key=lambda x: -abs(x[0]))
        print(f"opcodes executed a warp, B - A (top {a.top}):")
        for d, k in diff[:a.top]:
            print(f"  {k:32s} {ops_a.get(k, 0.0):8.1f} {ops_b.get(k, 0.0):8.1f} {d:+8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
