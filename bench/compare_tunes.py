#!/usr/bin/env python3
"""Compares the winners of two tuning runs of the same problems (is tuning reproducible?).

Input: two trial exports, `flashtune db export --format csv`, one per run. A run's winner for a
problem is its finalist with the lowest re-timed median (phase "retime"; the search minimum when
the run re-timed nothing), and that median is the winner's re-measured time. For every problem
in both runs it prints both winners, whether they are the same variant, and the ratio of the
second run's winner time to the first's; then how many problems are within --tolerance.

usage: compare_tunes.py FIRST.csv SECOND.csv [--tolerance 0.02]
Exit status: 0 when every common problem is within the tolerance, 1 otherwise, 2 on bad usage.
"""
import argparse
import csv
import math
import sys

PROBLEM_COLUMNS = ("dtype", "head_dim", "causal", "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv")


def problem_name(key):
    dtype, d, causal, b, nq, nk, hq, hkv = key
    return f"{dtype} d{d} {'causal' if causal == '1' else 'full'} B{b} Nq{nq} Nk{nk} Hq{hq} Hkv{hkv}"


def winners(rows):
    """problem key -> (variant, re-measured median us) from one run's exported trials."""
    best = {}
    for phase in ("retime", "search"):
        for r in rows:
            if r["status"] != "ok" or r["phase"] != phase:
                continue
            key = tuple(r[c] for c in PROBLEM_COLUMNS)
            if phase == "search" and key in best and best[key][2] == "retime":
                continue  # a re-timed finalist decides; search times only where nothing was re-timed
            t = float(r["median_us"])
            if key not in best or t < best[key][1]:
                best[key] = (r["variant"], t, phase)
    return {k: (v, t) for k, (v, t, _) in best.items()}


def compare(first_rows, second_rows, tolerance):
    """Rows of (problem, first winner, first us, second winner, second us, ratio) and the summary."""
    a, b = winners(first_rows), winners(second_rows)
    out = []
    for key in sorted(set(a) & set(b)):
        (va, ta), (vb, tb) = a[key], b[key]
        out.append((problem_name(key), va, ta, vb, tb, tb / ta))
    within = sum(1 for row in out if abs(row[5] - 1) <= tolerance)
    same = sum(1 for row in out if row[1] == row[3])
    return out, within, same


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = [c for c in PROBLEM_COLUMNS + ("variant", "status", "median_us", "phase") if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: not a `flashtune db export --format csv` file (no column {missing[0]})")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--tolerance", type=float, default=0.02, help="allowed |second/first - 1| (default 0.02)")
    a = ap.parse_args(argv)
    try:
        rows, within, same = compare(read(a.first), read(a.second), a.tolerance)
    except (OSError, ValueError) as e:
        print(f"compare_tunes: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("compare_tunes: the two runs have no problem in common", file=sys.stderr)
        return 1
    print(f"{'problem':46s} {'first winner':42s} {'us':>9s} {'second winner':42s} {'us':>9s} {'ratio':>6s}")
    for name, va, ta, vb, tb, ratio in rows:
        print(f"{name:46s} {va[len('fa2_fwd_'):]:42s} {ta:9.2f} {vb[len('fa2_fwd_'):]:42s} {tb:9.2f} {ratio:6.3f}")
    ratios = [r[5] for r in rows]
    worst = max(ratios, key=lambda x: abs(x - 1))
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    print(f"{within}/{len(rows)} problems within {a.tolerance:.0%}; same winner in {same}; "
          f"geometric mean ratio {geo:.4f}, worst {worst:.4f}")
    return 0 if within == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
