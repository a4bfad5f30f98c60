#!/usr/bin/env python3
"""Attention on PyTorch tensors through flashtune's C ABI (ctypes), checked against torch.

usage: flashtune_torch.py LIBFLASHTUNE_SO [DB_PATH] [--dtype bf16|f16] [--head-dim 128] [--causal]
                          [--batch 2] [--seqlen-q 1024] [--seqlen-k N] [--heads-q 8] [--heads-kv H]

Runs flashtune on torch's current CUDA stream (torch's primary context is current on this
thread, which is what flashtune launches in), compares o with
torch.nn.functional.scaled_dot_product_attention, prints the max error and PASS/FAIL, and
exits 1 on a mismatch (2 on a flashtune error).
"""
import argparse
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # a clear message, not a traceback
    sys.exit(f"flashtune_torch.py needs PyTorch with CUDA ({e}); install torch, or use "
             "examples/python/flashtune_ctypes.py, which needs only the library")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flashtune_ctypes import FT_DTYPE, FlashtuneError, Problem, Runtime, forward_args  # noqa: E402

TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16}


def strides3(t):  # [B, N, H, D] -> {batch, seq, head}; the last dim must be contiguous
    assert t.stride(3) == 1
    return (t.stride(0), t.stride(1), t.stride(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("db", nargs="?", default="")
    ap.add_argument("--dtype", default="bf16", choices=sorted(FT_DTYPE))
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seqlen-q", type=int, default=1024)
    ap.add_argument("--seqlen-k", type=int, default=0)
    ap.add_argument("--heads-q", type=int, default=8)
    ap.add_argument("--heads-kv", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=2e-2)
    a = ap.parse_args()
    nk = a.seqlen_k or a.seqlen_q
    hkv = a.heads_kv or a.heads_q
    dt = TORCH_DTYPE[a.dtype]

    torch.manual_seed(0)
    dev = torch.device("cuda")
    torch.cuda.init()  # makes the primary context current on this thread
    q = torch.randn(a.batch, a.seqlen_q, a.heads_q, a.head_dim, device=dev, dtype=dt)
    k = torch.randn(a.batch, nk, hkv, a.head_dim, device=dev, dtype=dt)
    v = torch.randn(a.batch, nk, hkv, a.head_dim, device=dev, dtype=dt)
    o = torch.empty_like(q)
    lse = torch.empty(a.batch, a.heads_q, a.seqlen_q, device=dev, dtype=torch.float32)

    try:
        with Runtime(a.lib, a.db) as rt:
            problem = Problem.make(a.dtype, a.head_dim, a.causal, a.batch, a.seqlen_q, nk, a.heads_q, hkv)
            info = rt.plan(problem)
            print(f"plan: {info.variant_uri} ({info.source_name}): {info.why}")
            args = forward_args(problem, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                                strides3(q), strides3(k), strides3(v), strides3(o))
            rt.forward(args, torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
    except FlashtuneError as e:
        print(e, file=sys.stderr)
        return 2

    # torch wants [B, H, N, D]; GQA by repeating K/V heads; causal aligned bottom-right.
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if hkv != a.heads_q:
        kt = kt.repeat_interleave(a.heads_q // hkv, dim=1)
        vt = vt.repeat_interleave(a.heads_q // hkv, dim=1)
    mask = None
    if a.causal:
        i = torch.arange(a.seqlen_q, device=dev)[:, None]
        j = torch.arange(nk, device=dev)[None, :]
        mask = j <= i + (nk - a.seqlen_q)
    ref = F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(), attn_mask=mask).transpose(1, 2)
    fully_masked = None
    if mask is not None:  # rows with no visible key: flashtune gives 0, torch gives NaN
        fully_masked = ~mask.any(dim=1)
        ref[:, fully_masked] = 0
    err = (o.float() - ref).abs().max().item()
    ok = err <= a.tolerance and torch.isfinite(o.float()).all().item()
    print(f"max abs error vs torch SDPA: {err:.3e} (tolerance {a.tolerance:g}): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
