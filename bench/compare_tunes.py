#!/usr/bin/env python3
"""Compares the winners of two tuning runs of the same problems (is tuning reproducible? is a
budgeted run as good as an exhaustive one?).

Input: the winners of each run, `flashtune db export --format csv --table winners` (what the
runtime launches: the tuner's choice after re-timing and its noise rule, which need not be the
fastest trial). For every problem in both runs it prints both winners, whether they are the
same variant, and the ratio of the second run's winner time to the first's; then how many
problems are within --tolerance.

Without --remeasure the times are the ones each run recorded, so the ratio mixes the choice
with the drift of the machine between the runs (1-5% here). With --remeasure FLASHTUNE, the two
winners of every problem where they differ are timed again side by side in one process
(`flashtune bench --variant A,B --rounds R`, order alternating per round): the ratio is then
the choice alone. Where both runs chose the same variant the ratio is 1 by definition.

usage: compare_tunes.py FIRST.csv SECOND.csv [--tolerance 0.02] [--one-sided]
                        [--remeasure FLASHTUNE [--rounds 5] [--bench-arg=ARG ...]]
--one-sided: only a slower second winner counts against the tolerance (budgeted vs exhaustive).
Exit status: 0 when every common problem is within the tolerance, 1 otherwise, 2 on bad usage
or when a re-measurement fails.
"""
import argparse
import csv
import json
import math
import subprocess
import sys

PROBLEM_COLUMNS = ("dtype", "head_dim", "causal", "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv")


def problem_name(key):
    dtype, d, causal, b, nq, nk, hq, hkv = key
    return f"{dtype} d{d} {'causal' if causal == '1' else 'full'} B{b} Nq{nq} Nk{nk} Hq{hq} Hkv{hkv}"


def winners(rows):
    """problem key -> (variant, median us) from one run's exported winners."""
    out = {}
    for r in rows:
        key = tuple(r[c] for c in PROBLEM_COLUMNS)
        if key in out:
            raise ValueError(f"{problem_name(key)} has several winners (other devices or toolchains): "
                             "compare databases of one device and one build")
        out[key] = (r["variant"], float(r["median_us"]))
    return out


def compare_keyed(first_rows, second_rows):
    """Rows of (problem, first winner, first us, second winner, second us, ratio) for the
    problems both runs tuned, sorted by problem name, and the problem key of each."""
    a, b = winners(first_rows), winners(second_rows)
    keyed = sorted(((problem_name(k), k) for k in set(a) & set(b)))
    rows = [(name, a[k][0], a[k][1], b[k][0], b[k][1], b[k][1] / a[k][1]) for name, k in keyed]
    return rows, [k for _, k in keyed]


def bench_command(flashtune, key, variants, rounds, extra=()):
    """The `flashtune bench` command line that times `variants` on the problem `key`."""
    dtype, d, causal, b, nq, nk, hq, hkv = key
    cmd = [flashtune, "bench", "--dtype", dtype, "--head-dim", d, "--batch", b, "--seqlen-q", nq, "--seqlen-k", nk,
           "--heads-q", hq, "--heads-kv", hkv, "--variant", ",".join(variants), "--rounds", str(rounds), "--json"]
    if causal == "1":
        cmd.append("--causal")
    return cmd + list(extra)


def parse_bench(stdout):
    """variant -> median µs from `flashtune bench --json`; raises ValueError on a failed variant."""
    out = {}
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r["status"] != "ok":
            raise ValueError(f"{r['variant']}: {r['status']}: {r['message']}")
        out[r["variant"]] = float(r["median_us"])
    return out


def remeasure(rows, keys, flashtune, rounds, extra=(), run=subprocess.run):
    """Replaces the recorded times of rows whose winners differ by times measured side by side.

    rows and keys as from compare_keyed(); `run` is subprocess.run (tests pass a stand-in)."""
    out = []
    for row, key in zip(rows, keys):
        name, va, ta, vb, tb, _ = row
        if va != vb:
            cmd = bench_command(flashtune, key, [va, vb], rounds, extra)
            p = run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise ValueError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
            times = parse_bench(p.stdout)
            if va not in times or vb not in times:
                raise ValueError(f"{' '.join(cmd)} did not report both variants")
            ta, tb = times[va], times[vb]
        out.append((name, va, ta, vb, tb, tb / ta if va != vb else 1.0))
    return out


def within(rows, tolerance, one_sided):
    """How many rows have a ratio within the tolerance (one-sided: only slower counts)."""
    return sum(1 for r in rows if (r[5] - 1 if one_sided else abs(r[5] - 1)) <= tolerance + 1e-12)


def same_winner(rows):
    return sum(1 for r in rows if r[1] == r[3])


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = [c for c in PROBLEM_COLUMNS + ("bucket", "variant", "median_us") if rows and c not in rows[0]]
    if missing or (rows and "status" in rows[0]):
        raise ValueError(f"{path}: not a `flashtune db export --format csv --table winners` file"
                         + (f" (no column {missing[0]})" if missing else " (it holds trials)"))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--tolerance", type=float, default=0.02, help="allowed |second/first - 1| (default 0.02)")
    ap.add_argument("--one-sided", action="store_true", help="only a slower second winner counts")
    ap.add_argument("--remeasure", metavar="FLASHTUNE", help="re-time differing winners side by side with this CLI")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per re-measurement (default 5)")
    ap.add_argument("--bench-arg", action="append", default=[], help="extra argument for flashtune bench")
    a = ap.parse_args(argv)
    try:
        rows, keys = compare_keyed(read(a.first), read(a.second))
        if a.remeasure and rows:
            rows = remeasure(rows, keys, a.remeasure, a.rounds, a.bench_arg)
    except (OSError, ValueError) as e:
        print(f"compare_tunes: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("compare_tunes: the two runs have no problem in common", file=sys.stderr)
        return 1
    n_within = within(rows, a.tolerance, a.one_sided)
    same = same_winner(rows)
    print("times: " + ("re-measured side by side where the winners differ" if a.remeasure else "as each run recorded"))
    print(f"{'problem':46s} {'first winner':42s} {'us':>9s} {'second winner':42s} {'us':>9s} {'ratio':>6s}")
    for name, va, ta, vb, tb, ratio in rows:
        note = "  same variant" if a.remeasure and va == vb else ""
        print(f"{name:46s} {va[len('fa2_fwd_'):]:42s} {ta:9.2f} {vb[len('fa2_fwd_'):]:42s} {tb:9.2f} {ratio:6.3f}{note}")
    ratios = [r[5] for r in rows]
    # One-sided, a faster second winner is no fault: the worst is the slowest.
    worst = max(ratios) if a.one_sided else max(ratios, key=lambda x: abs(x - 1))
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    print(f"{n_within}/{len(rows)} problems within {'+' if a.one_sided else ''}{a.tolerance:.0%}; same winner in "
          f"{same}; geometric mean ratio {geo:.4f}, worst {worst:.4f}")
    return 0 if n_within == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
