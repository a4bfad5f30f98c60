#!/usr/bin/env python3
"""A torch.autograd.Function over flashtune's C ABI: forward through ft_forward (which saves lse),
backward through ft_backward; its gradients compared with torch SDPA's (float32 math) on a few
shapes, gradcheck-style (relative L2 error of dq, dk, dv; also the deterministic mode).

usage: flashtune_autograd.py LIBFLASHTUNE_SO [DB_PATH] [--tolerance 3e-2]

Exits 1 on a mismatch, 2 on a flashtune error.
"""
import argparse
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"flashtune_autograd.py needs PyTorch with CUDA ({e})")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flashtune_ctypes import (FlashtuneError, Problem, Runtime, backward_args,  # noqa: E402
                              forward_args)

DTYPE_NAME = {torch.float16: "f16", torch.bfloat16: "bf16"}


def strides3(t):  # [B, N, H, D] -> {batch, seq, head}; the last dim must be contiguous
    assert t.stride(3) == 1
    return (t.stride(0), t.stride(1), t.stride(2))


def problem_of(q, k, causal):
    return Problem.make(DTYPE_NAME[q.dtype], q.shape[3], causal, q.shape[0], q.shape[1], k.shape[1], q.shape[2],
                        k.shape[2])


class FlashtuneAttention(torch.autograd.Function):
    """o = attention(q, k, v) with q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D] (GQA when Hkv < Hq)."""

    @staticmethod
    def forward(ctx, q, k, v, rt, causal, deterministic):
        problem = problem_of(q, k, causal)
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[0], q.shape[2], q.shape[1], device=q.device, dtype=torch.float32)
        fa = forward_args(problem, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                          strides3(q), strides3(k), strides3(v), strides3(o))
        rt.forward(fa, torch.cuda.current_stream().cuda_stream)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.rt, ctx.causal, ctx.deterministic = rt, causal, deterministic
        return o

    @staticmethod
    def backward(ctx, d_o):
        q, k, v, o, lse = ctx.saved_tensors
        d_o = d_o.contiguous() if d_o.stride(3) != 1 else d_o
        problem = problem_of(q, k, ctx.causal)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        ws_bytes = ctx.rt.backward_workspace_bytes(problem)
        workspace = torch.empty(ws_bytes, device=q.device, dtype=torch.uint8)  # torch's caching allocator
        fa = forward_args(problem, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                          strides3(q), strides3(k), strides3(v), strides3(o))
        ba = backward_args(fa, d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), strides3(d_o),
                           strides3(dq), strides3(dk), strides3(dv), workspace.data_ptr(), ws_bytes,
                           ctx.deterministic)
        ctx.rt.backward(ba, torch.cuda.current_stream().cuda_stream)
        return dq, dk, dv, None, None, None


def attention(rt, q, k, v, causal=False, deterministic=False):
    return FlashtuneAttention.apply(q, k, v, rt, causal, deterministic)


def sdpa_reference(q, k, v, causal):
    """torch SDPA in float32 on [B, N, H, D] tensors, GQA by repeating K/V heads, bottom-right causal."""
    nq, nk, hq, hkv = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    qt, kt, vt = q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float()
    if hkv != hq:
        kt = kt.repeat_interleave(hq // hkv, dim=1)
        vt = vt.repeat_interleave(hq // hkv, dim=1)
    mask = None
    if causal:
        i = torch.arange(nq, device=q.device)[:, None]
        j = torch.arange(nk, device=q.device)[None, :]
        mask = j <= i + (nk - nq)
    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask).transpose(1, 2)


def rel_l2(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def check(rt, shape, dtype, causal, deterministic, tolerance):
    b, nq, nk, hq, hkv, d = shape
    torch.manual_seed(1)
    q = torch.randn(b, nq, hq, d, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=dtype, requires_grad=True)
    d_o = torch.randn(b, nq, hq, d, device="cuda", dtype=dtype)
    got = torch.autograd.grad(attention(rt, q, k, v, causal, deterministic), (q, k, v), d_o)
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    want = torch.autograd.grad(sdpa_reference(q32, k32, v32, causal), (q32, k32, v32), d_o.float())
    errs = [rel_l2(g, w) for g, w in zip(got, want)]
    ok = all(e <= tolerance for e in errs) and all(torch.isfinite(g).all().item() for g in got)
    print(f"{DTYPE_NAME[dtype]} B{b} Nq{nq} Nk{nk} Hq{hq} Hkv{hkv} d{d} {'causal' if causal else 'full'}"
          f"{' det' if deterministic else ''}: dq {errs[0]:.2e} dk {errs[1]:.2e} dv {errs[2]:.2e} "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("db", nargs="?", default="")
    ap.add_argument("--tolerance", type=float, default=3e-2)
    a = ap.parse_args()
    torch.cuda.init()
    ok = True
    try:
        with Runtime(a.lib, a.db) as rt:
            for shape, dtype, causal, det in [((2, 256, 256, 8, 2, 64), torch.bfloat16, True, False),
                                              ((1, 300, 700, 4, 4, 128), torch.float16, False, False),
                                              ((1, 700, 300, 4, 1, 128), torch.bfloat16, True, True)]:
                ok &= check(rt, shape, dtype, causal, det, a.tolerance)
    except FlashtuneError as e:
        print(e, file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
