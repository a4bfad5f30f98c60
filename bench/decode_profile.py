#!/usr/bin/env python3
"""The decode kernels under Nsight Compute: flashtune's decode_fwd (main kernel and combine),
SDPA cuDNN and SDPA flash on B1 x 8k, B8 x 32k and B64 x 32k (bf16, d128, Hq 32, Hkv 8, one
query token, dense K/V), each called once inside cudaProfilerStart/Stop after warm-up calls
(NVRTC compiles and cuDNN plans stay outside). Run it under
  ncu --clock-control none --profile-from-start off --csv --page raw --metrics ... \
      python3 bench/decode_profile.py LIBFLASHTUNE
(bench/decode_round.sh has the metric list). Prints each shape's calls in order.
DECODE_PROFILE_SHAPES ("1x2048,8x2048": B x keys) replaces the shapes; DECODE_PROFILE_DB names a
database for flashtune's plans (default: none, the untuned plan); DECODE_PROFILE_LAYOUTS
("dense,dense-lens,paged16") gives flashtune's K/V layouts, each a call of its own (default dense):
dense-lens passes every sequence's length in memory (seqlens_k), pagedN puts the keys on N-key
pages in shuffled order (as bench/decode_bench.py does).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_bench import Runtime, layout_args  # noqa: E402

SHAPES = tuple(tuple(int(x) for x in s.split("x")) for s in os.environ["DECODE_PROFILE_SHAPES"].split(",")) \
    if os.environ.get("DECODE_PROFILE_SHAPES") else ((1, 8192), (8, 32768), (64, 32768))
LAYOUTS = tuple(os.environ.get("DECODE_PROFILE_LAYOUTS", "dense").split(","))


def main():
    rt = Runtime(os.path.abspath(sys.argv[1]), os.environ.get("DECODE_PROFILE_DB"))
    dev = torch.device("cuda")
    hq, hkv, d = 32, 8, 128
    calls = []
    for B, nk in SHAPES:
        q = torch.randn(B, 1, hq, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(B, nk, hkv, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        o = torch.empty_like(q)
        problem = rt.capi.Problem(rt.capi.DTYPES["bf16"], d, 0, B, 1, nk, hq, hkv)
        keep = []
        ours = []
        for layout in LAYOUTS:
            args = layout_args(rt, layout, problem, q, k, v, o, keep)
            ws_bytes = rt.workspace_size(args)
            ws = torch.empty(max(ws_bytes, 16), device=dev, dtype=torch.uint8)
            args.workspace, args.workspace_bytes = ws.data_ptr(), ws_bytes
            keep.extend((ws, args))

            def call(args=args):
                rt.forward_ex(args, torch.cuda.current_stream().cuda_stream)
            ours.append((f"flashtune {layout}", call))
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        def sdpa(backend, qt=qt, kt=kt, vt=vt):
            with torch.nn.attention.sdpa_kernel(backend):
                F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        for name, fn in ours + [("cudnn", lambda f=sdpa: f(torch.nn.attention.SDPBackend.CUDNN_ATTENTION)),
                                ("flash", lambda f=sdpa: f(torch.nn.attention.SDPBackend.FLASH_ATTENTION))]:
            for _ in range(3):
                fn()
            calls.append((f"B{B} x {nk} {name}", fn))
        calls[-1] = calls[-1] + ((q, k, v, o, keep),)  # keep the tensors alive
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for entry in calls:
        print(entry[0], flush=True)
        entry[1]()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
