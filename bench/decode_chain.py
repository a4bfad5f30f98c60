#!/usr/bin/env python3
"""Decode calls in a chain, kernel by kernel: where a call's time goes when it follows another.

Nsight Compute profiles each kernel alone (serialised, caches flushed), so what a kernel does
while the one before it drains (programmatic dependent launch: the split kernel's blocks start
early and wait at griddepcontrol.wait) never shows there; Nsight Systems does not run on the
device machines. This script replays a CUDA graph of chained calls, as bench/decode_bench.py
times them, under torch.profiler (CUPTI kernel records) and reports per system and K/V layout:
  period: the median time from one call's first kernel's start to the next call's (the call's
          cost in the chain; compare with `graph`, the same graph timed by CUDA events without
          the profiler, to see what tracing costs);
  lead:   the median time from the previous call's last kernel's end to this call's first
          kernel's start (negative: the kernels overlap);
  and each kernel's median duration as traced (start to end, waiting included).
Shapes: bf16, d128, Hq 32, Hkv 8, one query token, B x keys from DECODE_CHAIN_SHAPES
("1x2048,1x8192"); layouts from DECODE_CHAIN_LAYOUTS ("dense,dense-lens,paged16"; as
bench/decode_profile.py); SDPA cuDNN and flash on the dense cache beside them.

usage (GPU): decode_chain.py LIBFLASHTUNE [--db DB] [--calls 20] [--json OUT.json]
The statistics (chain_stats) need no GPU; bench/decode_chain_test.py tests them.
"""
import argparse
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The first kernel of one call, per system: a call is the kernels from one such start to the next.
CALL_START = {
    "flashtune": re.compile(r"^decode_fwd_.*_(full|causal)$"),
    "cudnn": re.compile(r"cudnn_generated|sdpa.*fprop|fprop.*sdpa"),
    "flash": re.compile(r"flash_fwd(_splitkv)?_kernel"),
}


def median(xs):
    xs = sorted(xs)
    if not xs:
        return math.nan
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else 0.5 * (xs[mid - 1] + xs[mid])


def short_name(name):
    """A kernel's name cut to what tells kernels apart in a table (templates and arguments off)."""
    name = re.sub(r"^void\s+", "", name)
    name = re.sub(r"\(.*$", "", name)
    name = re.sub(r"<.*$", "", name)
    return name if len(name) <= 60 else name[:57] + "..."


def chain_stats(events, call_start):
    """events: (name, start_us, duration_us) of one system's kernels in a chain of calls, any
    order; call_start: a compiled regex matching the first kernel of each call. Returns a dict:
    calls (complete calls seen), period_us and lead_us (medians over consecutive calls; see the
    module's docstring), kernels {short name: median duration_us}. Kernels before the first
    call start are ignored; the last call counts for the kernels' durations only."""
    evs = sorted(events, key=lambda e: e[1])
    calls = []
    for name, start, dur in evs:
        if call_start.search(name):
            calls.append([])
        if calls:
            calls[-1].append((name, start, dur))
    periods, leads = [], []
    for prev, cur in zip(calls, calls[1:]):
        periods.append(cur[0][1] - prev[0][1])
        leads.append(cur[0][1] - max(s + d for _, s, d in prev))
    durs = {}
    for call in calls:
        for name, _, dur in call:
            durs.setdefault(short_name(name), []).append(dur)
    return {"calls": len(calls), "period_us": median(periods), "lead_us": median(leads),
            "kernels": {k: median(v) for k, v in durs.items()}}


def format_row(label, stats, graph_us):
    kernels = ", ".join(f"{k} {v:.2f}" for k, v in stats["kernels"].items())
    return (f"{label:28s} calls {stats['calls']:3d}  period {stats['period_us']:7.2f} us  graph {graph_us:7.2f} us  "
            f"lead {stats['lead_us']:6.2f} us  | {kernels}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib")
    ap.add_argument("--db", default="")
    ap.add_argument("--calls", type=int, default=20, help="calls in the graph (>= 4)")
    ap.add_argument("--json", default="", help="write the statistics here")
    a = ap.parse_args(argv)
    if a.calls < 4:
        ap.error(f"--calls {a.calls}: allowed 4 or more (a call's period needs calls on both sides)")

    import ctypes

    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, HERE)
    from decode_bench import L2_BYTES, Runtime, layout_args  # noqa: E402
    shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ.get("DECODE_CHAIN_SHAPES", "1x2048,1x8192").split(",")]
    layouts = os.environ.get("DECODE_CHAIN_LAYOUTS", "dense,dense-lens,paged16").split(",")
    rt = Runtime(os.path.abspath(a.lib), a.db or None)
    dev = torch.device("cuda")
    hq, hkv, d = 32, 8, 128
    stream = torch.cuda.Stream()
    results = []

    def chained(label, system, fn, copies):
        """fn(i) issues one call on input copy i; a graph of a.calls calls, timed, then traced."""
        with torch.cuda.stream(stream):
            for i in range(copies):
                fn(i)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(a.calls):
                fn(i % copies)
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0.record()
            graph.replay()
            t1.record()
            t1.synchronize()
            times.append(t0.elapsed_time(t1) * 1000.0 / a.calls)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            graph.replay()
            torch.cuda.synchronize()
        events = [(e.name, float(e.time_range.start), float(e.time_range.elapsed_us())) for e in prof.events()
                  if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))]
        if not events:
            raise SystemExit(f"{label}: torch.profiler recorded no GPU kernels (CUPTI unavailable?)")
        stats = chain_stats(events, CALL_START[system])
        stats.update(label=label, graph_us=median(times), events=len(events))
        results.append(stats)
        print(format_row(label, stats, stats["graph_us"]), flush=True)
        del graph

    for B, nk in shapes:
        kv_bytes = 2 * B * nk * hkv * d * 2
        copies = max(1, min(4, math.ceil(3 * L2_BYTES / kv_bytes)))
        q = torch.randn(B, 1, hq, d, device=dev, dtype=torch.bfloat16)
        o = torch.empty_like(q)
        kvs = [(torch.randn(B, nk, hkv, d, device=dev, dtype=torch.bfloat16),
                torch.randn(B, nk, hkv, d, device=dev, dtype=torch.bfloat16)) for _ in range(copies)]
        problem = rt.capi.Problem(rt.capi.DTYPES["bf16"], d, 0, B, 1, nk, hq, hkv)
        for layout in layouts:
            keep, args = [], []
            for k, v in kvs:
                x = layout_args(rt, layout, problem, q, k, v, o, keep)
                size = rt.workspace_size(x)
                ws = torch.empty(max(size, 16), device=dev, dtype=torch.uint8)
                x.workspace, x.workspace_bytes = ws.data_ptr(), size
                keep.extend((ws, x))
                args.append(x)
            refs = [ctypes.byref(x) for x in args]

            def call(i, refs=refs):
                rc = rt.forward_ex_fn(rt.handle, refs[i], ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
                if rc != 0:
                    rt.check(rc, "ft_forward_ex")
            chained(f"B{B} x {nk} flashtune {layout}", "flashtune", call, copies)
            del keep, args, refs
        qt = q.transpose(1, 2)
        for system, backend in (("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION),
                                ("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION)):
            def sdpa(i, backend=backend):
                k, v = kvs[i]
                with torch.nn.attention.sdpa_kernel(backend):
                    F.scaled_dot_product_attention(qt, k.transpose(1, 2), v.transpose(1, 2), enable_gqa=True)
            try:
                chained(f"B{B} x {nk} sdpa {system}", system, sdpa, copies)
            except RuntimeError as e:
                print(f"B{B} x {nk} sdpa {system}: {str(e).splitlines()[0]}", flush=True)
        q = o = kvs = None  # freed (the timed calls named them)
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
