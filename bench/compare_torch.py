#!/usr/bin/env python3
"""flashtune's tuned winners against PyTorch SDPA (flash = FlashAttention-2, cuDNN), on the GPU.

Reads a tuning database written by `flashtune tune`: for every tuned problem it loads the
winner's cubin from the database, checks its output against SDPA's flash backend on the same
random inputs, times both backends and the winner with CUDA events (median of 30 after a
warm-up) on the same machine in the same run, and prints one table with the ratios.

usage: compare_torch.py DB [--out DIR] [--arch sm_90a]
"""
import argparse
import json
import math
import os
import sqlite3
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_probe import Kernel, bench  # noqa: E402

BACKENDS = (("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION),
            ("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION))


def winners(db, arch):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        """SELECT p.dtype, p.head_dim, p.causal, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv,
                  v.uri, w.median_us, c.image, c.registers, c.spill_bytes
           FROM winners w JOIN problems p ON p.id = w.problem_id JOIN variants v ON v.id = w.variant_id
           LEFT JOIN cubins c ON c.source_hash = v.source_hash AND c.arch = ?
           ORDER BY p.head_dim, p.dtype, p.causal, p.seqlen_q""", (arch,)).fetchall()
    con.close()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--arch", default="sm_90a")
    a = ap.parse_args()
    torch.zeros(1, device="cuda")
    results, lines = [], []
    header = (f"{'dtype':5s} {'D':>3s} {'mask':6s} {'B':>3s} {'N':>6s} {'H':>3s}  {'flashtune':>9s} {'flash':>7s} "
              f"{'cudnn':>7s} {'x flash':>7s} {'x cudnn':>7s} {'err':>8s} spill  winner")
    for (dt, d, causal, B, nq, nk, hq, hkv, uri, tuned_us, image, regs, spill) in winners(a.db, a.arch):
        dtype = torch.bfloat16 if dt == "bf16" else torch.float16
        if image is None:
            print(f"no cubin stored for {uri} ({a.arch}); skipped", flush=True)
            continue
        kern = Kernel(None, data=bytes(image), uri=uri)
        q = torch.randn(B, nq, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(B, nk, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(B, nk, hkv, d, device="cuda", dtype=dtype)
        o = torch.full_like(q, float("nan"))
        lse = torch.empty(B, hq, nq, device="cuda", dtype=torch.float32)
        scale = 1 / math.sqrt(d)
        flops = 4 * B * hq * nq * nk * d / (2 if causal and nq == nk else 1)
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        row = {"dtype": dt, "head_dim": d, "causal": bool(causal), "batch": B, "seqlen": nq, "heads": hq,
               "winner": uri, "tuned_us": tuned_us, "registers": regs, "spill_bytes": spill}
        gqa = hq != hkv
        for name, backend in BACKENDS:
            try:
                with torch.nn.attention.sdpa_kernel(backend):
                    ms = bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal),
                                                                      enable_gqa=gqa))
                row[name] = flops / ms / 1e9
            except RuntimeError:
                row[name] = float("nan")
        with torch.nn.attention.sdpa_kernel(BACKENDS[0][1]):
            ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal), enable_gqa=gqa).transpose(1, 2)
        kern(q, k, v, o, lse, scale)
        torch.cuda.synchronize()
        row["err_vs_flash"] = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        ms = bench(lambda: kern(q, k, v, o, lse, scale))
        row["flashtune"] = flops / ms / 1e9
        results.append(row)
        line = (f"{dt:5s} {d:3d} {'causal' if causal else 'full':6s} {B:3d} {nq:6d} {hq:3d}  {row['flashtune']:9.1f} "
                f"{row['flash']:7.1f} {row['cudnn']:7.1f} {row['flashtune'] / row['flash']:7.2f} "
                f"{row['flashtune'] / row['cudnn']:7.2f} {row['err_vs_flash']:8.1e} {spill:5d}  {uri}")
        lines.append(line)
        print(line, flush=True)
        q = k = v = o = lse = ref = None  # freed before the next shape (the timed lambdas named them)
    json.dump(results, open(os.path.join(a.out, "compare_torch.json"), "w"), indent=1)
    print("\n" + header)
    for line in lines:
        print(line)
    # Geometric means of the ratio to flash, per head dim.
    for d in sorted({r["head_dim"] for r in results}):
        rs = [r["flashtune"] / r["flash"] for r in results if r["head_dim"] == d and r["flash"] == r["flash"]]
        if rs:
            g = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"d{d}: geomean x flash {g:.3f}, min {min(rs):.3f} over {len(rs)} shapes")
    bad = [r for r in results if not (r["err_vs_flash"] < 2e-2)]
    print(f"output check vs torch flash: {len(results) - len(bad)}/{len(results)} within 2e-2")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
