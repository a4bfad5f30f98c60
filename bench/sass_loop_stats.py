#!/usr/bin/env python3
"""Instruction counts of a hopper_fwd kernel's K/V loop, read from `cuobjdump -sass` text.

The consumer's K/V loop is the shortest predicated backward branch whose body holds HGMMA
instructions (a persistent block's tile loop holds it too, and is longer). Inside it,
the masking code (keys past seqlen_k, the causal diagonal) sits behind a forward branch that
unmasked blocks take; the longest such skip is reported, and "unmasked" is the body without it:
the instructions a warp issues per K/V block away from the sequence's end and the diagonal.
Per key = unmasked / block_n (parsed from the kernel name's _bnN_, or --block-n).

usage: cuobjdump -sass K.cubin | bench/sass_loop_stats.py [--block-n N] [--name NAME]
       bench/sass_loop_stats.py K.sass ...   (one line per file)
"""
import argparse
import re
import sys

INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRA = re.compile(r"\bBRA(?:\.[A-Z.]+)?\s+(?:!?U?P\d+,\s*)?0x([0-9a-f]+)")


def parse(text):
    insns = []
    for line in text.splitlines():
        m = INSN.match(line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2)))
    return insns


def stats(insns, block_n):
    loops = []
    for addr, op in insns:
        m = BRA.search(op)
        # A loop's back edge is predicated; the unconditional backward branches are the
        # out-of-line mbarrier retry stubs returning into the loop.
        if m and op.startswith("@") and int(m.group(1), 16) <= addr:
            start = int(m.group(1), 16)
            body = [(a, o) for a, o in insns if start <= a <= addr]
            loops.append((sum("HGMMA" in o for _, o in body), -len(body), start, addr, body))
    loops = [l for l in loops if l[0] > 0]
    if not loops:
        return None
    hgmma, _, start, end, body = min(loops, key=lambda l: -l[1])
    skip = 0
    for a, o in body:
        m = BRA.search(o)
        if m and a < int(m.group(1), 16) <= end:
            skip = max(skip, sum(1 for b, _ in body if a < b < int(m.group(1), 16)))
    count = lambda key: sum(key in o for _, o in body)
    unmasked = len(body) - skip
    return {
        "loop": f"{start:#x}-{end:#x}", "body": len(body), "mask_skip": skip, "unmasked": unmasked,
        "per_key": unmasked / block_n if block_n else float("nan"), "HGMMA": hgmma, "MUFU": count("MUFU"),
        "SHFL": count("SHFL"), "FMUL": count("FMUL"), "FFMA": count("FFMA"), "FMNMX": count("FMNMX"),
        "F2FP": count("F2FP"), "SYNCS": count("SYNCS"), "BAR": count("BAR"), "DEPBAR": count("DEPBAR"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--block-n", type=int, default=0)
    ap.add_argument("--name", default="")
    args = ap.parse_args()
    inputs = [(f, open(f).read()) for f in args.files] or [(args.name or "stdin", sys.stdin.read())]
    first = True
    for name, text in inputs:
        bn = args.block_n
        if not bn:
            m = re.search(r"_bn(\d+)_", name + " " + text[:4000])
            bn = int(m.group(1)) if m else 0
        s = stats(parse(text), bn)
        if s is None:
            print(f"{name}: no loop with HGMMA found", file=sys.stderr)
            continue
        if first:
            print("kernel\t" + "\t".join(s))
            first = False
        print(name + "\t" + "\t".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in s.values()))


if __name__ == "__main__":
    main()
