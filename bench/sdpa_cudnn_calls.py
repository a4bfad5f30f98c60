#!/usr/bin/env python3
"""Calls PyTorch SDPA's cuDNN backend on one attention shape, a few times: a target for ncu
(bench/hopper_round.sh's ncu step profiles cuDNN's kernel next to flashtune's on the same shape).

usage: sdpa_cudnn_calls.py --batch 32 --heads 32 --seqlen 512 --head-dim 64 [--causal] [--dtype bf16] [--calls 4]
"""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seqlen", type=int, required=True)
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    ap.add_argument("--calls", type=int, default=4)
    a = ap.parse_args()
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    # [B, H, N, D] as SDPA takes it
    q, k, v = (torch.randn(a.batch, a.heads, a.seqlen, a.head_dim, device="cuda", dtype=dt) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(a.calls):
            F.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
