#!/usr/bin/env python3
"""Training through flashtune: gradients of flashtune.attention (its backward pass is ft_backward,
the fa2_bwd family) against torch SDPA's in float32, gradcheck-style (relative L2 error of dq, dk,
dv) on a few odd shapes (ragged N, Nq != Nk causal, GQA, MQA, fp16 and bf16), and the
deterministic mode's gradients bit-identical over three runs.

usage: flashtune_autograd.py [--db PATH] [--tolerance 3e-2]
Needs torch with CUDA and the flashtune package (installed, or python/ on sys.path with
FLASHTUNE_LIB set). Exits 1 on a mismatch, 2 on a flashtune error.
"""
import argparse
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"flashtune_autograd.py needs PyTorch with CUDA ({e})")

import flashtune


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
    runs = 3 if deterministic else 1
    got = [torch.autograd.grad(rt.attention(q, k, v, causal, deterministic=deterministic), (q, k, v), d_o)
           for _ in range(runs)]
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    want = torch.autograd.grad(sdpa_reference(q32, k32, v32, causal), (q32, k32, v32), d_o.float())
    errs = [rel_l2(g, w) for g, w in zip(got[0], want)]
    ok = all(e <= tolerance for e in errs) and all(torch.isfinite(g).all().item() for g in got[0])
    same = all(torch.equal(a, b) for run in got[1:] for a, b in zip(run, got[0]))
    name = {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    print(f"{name} B{b} Nq{nq} Nk{nk} Hq{hq} Hkv{hkv} d{d} {'causal' if causal else 'full'}"
          f"{' det (3 runs ' + ('bit-identical)' if same else 'DIFFER)') if deterministic else ''}: "
          f"dq {errs[0]:.2e} dk {errs[1]:.2e} dv {errs[2]:.2e} {'PASS' if ok and same else 'FAIL'}")
    return ok and same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="")
    ap.add_argument("--tolerance", type=float, default=3e-2)
    a = ap.parse_args()
    torch.cuda.init()
    ok = True
    try:
        with flashtune.Runtime(a.db) as rt:
            for shape, dtype, causal, det in [((2, 256, 256, 8, 2, 64), torch.bfloat16, True, False),
                                              ((1, 300, 700, 4, 4, 128), torch.float16, False, False),
                                              ((1, 700, 300, 4, 1, 128), torch.bfloat16, True, True),
                                              ((2, 1000, 1000, 8, 8, 64), torch.float16, True, True)]:
                ok &= check(rt, shape, dtype, causal, det, a.tolerance)
    except flashtune.FlashtuneError as e:
        print(e, file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
