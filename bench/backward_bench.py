#!/usr/bin/env python3
"""Backward-pass timing: flashtune's ft_backward (default and deterministic) against PyTorch
SDPA's flash and cuDNN backward, in the same run, on FA-2's grid (hidden 2048, B·N = 16k).

usage: backward_bench.py [--db PATH] [--head-dims 64,128] [--seqlens 1024,4096,16384]
                         [--dtypes bf16] [--reps 20] [--timing queued|sync]
                         [--warmup-s 0.1]
Needs torch with CUDA and the flashtune package (installed, or python/ on sys.path with
FLASHTUNE_LIB set).

Each timing is kernel_probe.bench's (as perf_report.py's): the median of --reps CUDA-event-timed
calls after a warm-up (3 calls, then --warmup-s seconds of calls), queued back to back (--timing
sync: each call synchronised, adding the host's launch latency). TFLOP/s use
the backward convention: 2.5 x the forward's 4·B·H·N²·D, halved when causal. SDPA is timed as
torch.autograd.grad of its output (retain_graph), which launches its backward kernels only.
Prints one table row per shape; the last lines are the geomean ratios.
"""
import argparse
import ctypes
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashtune
from flashtune import _capi, ops
from kernel_probe import bench as time_calls  # bench/ is this script's folder: on sys.path

TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}


QUEUED = True  # --timing: queued (default) or sync
WARMUP_S = 0.1  # --warmup-s


def median_ms(fn, reps):
    """kernel_probe.bench (perf_report.py's timing): 3 calls, WARMUP_S seconds of calls, then reps
    calls with an event pair around each, queued back to back (or, --timing sync, each call
    synchronised). The time-based warm-up matters here: three calls alone left the GPU's clock
    ramping for the first system timed at a short shape (session 18: the default at causal N 1k
    read 8-13% slower than in `flashtune bench`)."""
    return time_calls(fn, reps, WARMUP_S, queued=QUEUED)


def bench_shape(rt, dtype, d, n, causal, reps):
    heads = 2048 // d
    batch = 16384 // n
    q = torch.randn(batch, n, heads, d, device="cuda", dtype=dtype)
    k, v, d_o = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    o, lse = rt.attention(q, k, v, causal, return_lse=True)
    problem = flashtune.Problem.from_tensors(q, k, v, causal)
    stream = torch.cuda.current_stream().cuda_stream
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ws_bytes = rt.backward_workspace_bytes(problem)
    ws = torch.empty(ws_bytes, device="cuda", dtype=torch.uint8)
    row = {}
    # The arguments built once, ft_backward called directly: the kernels' time, not Python's.
    ba = _capi.BackwardArgs()
    ba.forward = _capi.ForwardArgs.from_buffer_copy(ops.pack_args(q, k, v, o, lse, causal))
    ba.d_o, ba.dq, ba.dk, ba.dv = d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    for field, t in (("d_o_strides", d_o), ("dq_strides", dq), ("dk_strides", dk), ("dv_strides", dv)):
        setattr(ba, field, _capi.Strides3(*t.stride()[:3]))
    ba.workspace, ba.workspace_bytes = ws.data_ptr(), ws_bytes
    raw = _capi.function("ft_backward")
    for det in (False, True):
        ba.deterministic = int(det)
        rt.backward(ba, stream)  # first call: plan, compile, load
        ref, handle = ctypes.byref(ba), rt._live()
        row["det" if det else "ft"] = median_ms(lambda: raw(handle, ref, stream), reps)
    plan = rt.plan(problem, backward=True).variant_uri
    qt, kt, vt = (t.transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    dot = d_o.transpose(1, 2)
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                row[name] = median_ms(lambda: torch.autograd.grad(out, (qt, kt, vt), dot, retain_graph=True), reps)
        except RuntimeError as e:
            print(f"  {name}: not available ({str(e).splitlines()[0]})")
            row[name] = float("nan")
    flops = 2.5 * 4.0 * batch * heads * n * n * d * (0.5 if causal else 1.0)
    return row, flops, plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="")
    ap.add_argument("--head-dims", default="64,128")
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--timing", choices=("queued", "sync"), default="queued",
                    help="queued: calls back to back, one synchronisation at the end; sync: each call synchronised")
    ap.add_argument("--warmup-s", type=float, default=0.1, help="warm-up time per timed function (after 3 calls)")
    a = ap.parse_args()
    global QUEUED, WARMUP_S
    QUEUED = a.timing == "queued"
    WARMUP_S = a.warmup_s
    torch.cuda.init()
    ratios_flash, ratios_cudnn, det_cost = [], [], []
    print(f"{'shape':34} {'ft ms':>8} {'det ms':>8} {'flash ms':>9} {'cudnn ms':>9} {'ft TF/s':>8} {'flash':>6} "
          f"{'cudnn':>6} {'ft/flash':>8} {'det/ft':>6}  plan")
    with flashtune.Runtime(a.db) as rt:
        for dt in a.dtypes.split(","):
            for d in (int(x) for x in a.head_dims.split(",")):
                for causal in (False, True):
                    for n in (int(x) for x in a.seqlens.split(",")):
                        row, flops, plan = bench_shape(rt, TORCH_DTYPE[dt], d, n, causal, a.reps)
                        tf = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
                        speed = row["flash"] / row["ft"]
                        ratios_flash.append(speed)
                        if not math.isnan(row["cudnn"]):
                            ratios_cudnn.append(row["cudnn"] / row["ft"])
                        det_cost.append(row["det"] / row["ft"])
                        shape = f"{dt} d{d} N{n} B{16384 // n} H{2048 // d} {'causal' if causal else 'full'}"
                        print(f"{shape:34} {row['ft']:8.3f} {row['det']:8.3f} {row['flash']:9.3f} {row['cudnn']:9.3f} "
                              f"{tf(row['ft']):8.1f} {tf(row['flash']):6.1f} {tf(row['cudnn']):6.1f} {speed:8.2f} "
                              f"{row['det'] / row['ft']:6.2f}  {plan}", flush=True)
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")  # noqa: E731
    print(f"geomean speed vs SDPA flash backward: {geo(ratios_flash):.2f}x (min {min(ratios_flash):.2f}x)")
    print(f"geomean speed vs SDPA cuDNN backward: {geo(ratios_cudnn):.2f}x")
    print(f"deterministic / default time: geomean {geo(det_cost):.2f}x (max {max(det_cost):.2f}x)")


if __name__ == "__main__":
    main()
