#!/usr/bin/env python3
"""Swapping torch.nn.functional.scaled_dot_product_attention for flashtune in a small model.

A two-layer causal transformer written the usual way (SDPA on [B, H, N, D]) runs once with SDPA
and once with F.scaled_dot_product_attention replaced by `flashtune_sdpa` below, which takes
SDPA's arguments and calls flashtune.attention on [B, N, H, D] views of the same memory (no
copies). The script prints both outputs' difference, what flashtune launched, and exits 1 when
they differ by more than bf16 rounding.

usage: python3 examples/python/sdpa_swap.py [--seqlen 1024] [--batch 4] [--compile]
Needs PyTorch with a CUDA GPU and the flashtune package (pip install .).
"""
import argparse
import sys

import torch
import torch.nn.functional as F

import flashtune

sdpa = F.scaled_dot_product_attention


def flashtune_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """SDPA's signature on flashtune, for the calls flashtune serves; the rest go to SDPA.
    flashtune aligns causal masks bottom-right, SDPA top-left: they agree when Nq == Nk."""
    if attn_mask is not None or dropout_p or (is_causal and query.shape[-2] != key.shape[-2]):
        return sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    o = flashtune.attention(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), causal=is_causal,
                            softmax_scale=scale)
    return o.transpose(1, 2)


class Layer(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # looked up at call time: swappable
        x = x + self.proj(a.transpose(1, 2).reshape(B, N, C))
        return x + self.mlp(self.norm2(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--compile", action="store_true", help="also run the swapped model under torch.compile")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(Layer(1024, 16), Layer(1024, 16)).cuda().to(torch.bfloat16).eval()
    x = torch.randn(a.batch, a.seqlen, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        expected = model(x)
        F.scaled_dot_product_attention = flashtune_sdpa
        try:
            got = model(x)
            compiled = torch.compile(model, fullgraph=True)(x) if a.compile else None
        finally:
            F.scaled_dot_product_attention = sdpa
    q = torch.empty(a.batch, a.seqlen, 16, 64, device="cuda", dtype=torch.bfloat16)
    print(f"flashtune launched {flashtune.plan(q, q, q, causal=True)}")
    ok = True
    for name, y in (("eager", got), ("torch.compile", compiled)):
        if y is None:
            continue
        err = ((y.float() - expected.float()).norm() / expected.float().norm()).item()
        ok &= err <= 2e-2
        print(f"{name}: relative L2 difference from SDPA {err:.2e} ({'PASS' if err <= 2e-2 else 'FAIL'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
