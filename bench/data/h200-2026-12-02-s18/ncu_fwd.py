#!/usr/bin/env python3
"""One forward shape, flashtune (through the runtime and a database) then SDPA's cuDNN backend,
a few calls each, for ncu to profile the later calls of each (session 18, call 6).
usage: ncu_fwd.py DB DTYPE D B N H CAUSAL   (PYTHONPATH=python, FLASHTUNE_LIB set)"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashtune

db, dtype, d, b, n, h, causal = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])
dt = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dt) for _ in range(3))
rt = flashtune.Runtime(db)
for _ in range(4):
    rt.attention(q, k, v, bool(causal))
torch.cuda.synchronize()
qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
torch.cuda.synchronize()
print("plan:", rt.plan(flashtune.Problem(dtype, d, b, n, h, causal=bool(causal))).variant_uri)
