#!/usr/bin/env python3
"""flashtune.attention, the Python package's PyTorch op, on a GPU machine, in one run:

  1. correctness: odd shapes (ragged N, Nq != Nk causal, GQA, MQA, K/V broadcast over heads,
     strided views of a packed QKV tensor and of [B, H, N, D] storage, fp16, head dim 96,
     softmax_scale, lse) against a float64 reference on random data, the
     outputs' memory poisoned with NaN first;
  2. errors: bad input raises InvalidArgument naming the argument; a gradient through lse raises;
  3. the Python call's host overhead against a direct C ABI launch of the same arguments (and
     attention_with_kvcache's / attention_varlen's against ft_forward_ex);
  4. CUDA graphs: a captured call replays on new inputs;
  5. speed on the hidden-2048 grid (bf16, d64/d128, N 1k/4k/16k, causal or not) against SDPA
     flash (FA-2) and cuDNN in the same run (CUDA events, median of --reps after warm-up);
  6. torch.compile(fullgraph=True, dynamic=True) of a small attention block, against eager;
  7. flashtune.tune (the bundled CLI's tuner) on one small problem, then its plan.
Every section that fails records FAIL and the run goes on; a section that would pass the
--deadline-s is skipped, saying so. The last lines are a summary table.

usage: python_op.py [--out DIR] [--deadline-s S] [--reps N]
Needs torch with CUDA and the flashtune package (installed, or python/ on sys.path with
FLASHTUNE_LIB and FLASHTUNE_CLI set). Exit 0 when every check passed.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import flashtune
from flashtune.ops import pack_args

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_probe import bench, reference  # noqa: E402  (CUDA events, median after warm-up; float64 reference)

START = time.time()
RESULTS = []  # (section, name, ok, detail)


def record(section, name, ok, detail=""):
    RESULTS.append((section, name, ok, detail))
    print(f"[{time.time() - START:6.1f}s] {section:8s} {'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def poison():
    """Fills the allocator's free blocks with NaN, so an output the kernel never writes shows."""
    free = torch.cuda.mem_get_info()[0]
    blob = torch.full((min(free // 4, 1 << 28),), float("nan"), device="cuda")
    del blob


def rel_err(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


def correctness(dev):
    cases = []

    def randn(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, device=dev, dtype=dtype)

    q = randn(2, 1024, 16, 128)
    cases.append(("bf16 d128 B2 N1024 H16", q, randn(2, 1024, 16, 128), randn(2, 1024, 16, 128), False, None))
    cases.append(("bf16 d64 causal ragged N1000", randn(3, 1000, 8, 64), randn(3, 1000, 8, 64), randn(3, 1000, 8, 64),
                  True, None))
    h = dict(dtype=torch.float16)
    cases.append(("f16 d128 causal Nq77 Nk3000 (bottom-right)", randn(2, 77, 8, 128, **h), randn(2, 3000, 8, 128, **h),
                  randn(2, 3000, 8, 128, **h), True, None))
    cases.append(("bf16 d128 causal GQA Hq32 Hkv8 N512", randn(2, 512, 32, 128), randn(2, 512, 8, 128),
                  randn(2, 512, 8, 128), True, None))
    cases.append(("bf16 d64 MQA Hq16 Hkv1 Nq300 Nk1300", randn(2, 300, 16, 64), randn(2, 1300, 1, 64),
                  randn(2, 1300, 1, 64), False, None))
    k1, v1 = randn(2, 700, 1, 128), randn(2, 700, 1, 128)
    cases.append(("bf16 d128 K/V expanded over heads (stride 0)", randn(2, 700, 8, 128), k1.expand(2, 700, 8, 128),
                  v1.expand(2, 700, 8, 128), False, None))
    qkv = randn(2, 900, 3, 12, 64)
    cases.append(("bf16 d64 causal views of packed qkv [B,N,3,H,D]", qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], True,
                  None))
    qt, kt, vt = (randn(2, 12, 640, 128).transpose(1, 2) for _ in range(3))
    cases.append(("bf16 d128 views of [B,H,N,D] storage", qt, kt, vt, False, None))
    cases.append(("bf16 d96 causal N333", randn(1, 333, 4, 96), randn(1, 333, 4, 96),
                  randn(1, 333, 4, 96), True, None))
    cases.append(("f16 d256 softmax_scale 0.03 N512", randn(1, 512, 4, 256, **h), randn(1, 512, 4, 256, **h),
                  randn(1, 512, 4, 256, **h), False, 0.03))
    for name, q, k, v, causal, scale in cases:
        try:
            plan = flashtune.plan(q, k, v, causal=causal)
            poison()
            o, lse = flashtune.attention(q, k, v, causal=causal, softmax_scale=scale, return_lse=True)
            torch.cuda.synchronize()
            ro, rlse = reference(q, k, v, causal, scale if scale else 1 / math.sqrt(q.shape[-1]))
            err = rel_err(o, ro)
            finite = rlse.isfinite()
            lse_err = (lse.double()[finite] - rlse[finite]).abs().max().item()
            lse_inf_ok = bool((lse[~finite] == float("-inf")).all().item())
            ok = (err <= 1e-2 and lse_err <= 1e-2 and lse_inf_ok and bool(o.isfinite().all().item())
                  and o.shape == q.shape and lse.shape == (q.shape[0], q.shape[2], q.shape[1]))
            record("correct", name, ok, f"rel L2 {err:.2e}, lse max abs {lse_err:.1e}; {plan.variant_uri} "
                                        f"({plan.source_name})")
        except Exception as e:  # noqa: BLE001 (a failed case is data; the run goes on)
            record("correct", name, False, f"{type(e).__name__}: {e}")


def errors(dev):
    q = torch.randn(1, 64, 2, 64, device=dev, dtype=torch.bfloat16)
    cases = [
        ("CPU tensors", lambda: flashtune.attention(q.cpu(), q.cpu(), q.cpu()), "q.device"),
        ("last dim not contiguous", lambda: flashtune.attention(
            q, q, torch.randn(1, 64, 64, 2, device=dev, dtype=torch.bfloat16).transpose(2, 3)), "v.stride(3)"),
        ("float32", lambda: flashtune.attention(q.float(), q.float(), q.float()), "q.dtype"),
        ("k dtype differs", lambda: flashtune.attention(q, q.half(), q.half()), "k.dtype"),
        ("head_dim 100 (C ABI)", lambda: flashtune.attention(*[torch.randn(1, 64, 2, 100, device=dev,
                                                                           dtype=torch.bfloat16)] * 3), "head_dim"),
        ("Hq 3 over Hkv 2 (C ABI)", lambda: flashtune.attention(torch.randn(1, 64, 3, 64, device=dev,
                                                                            dtype=torch.bfloat16), q, q), "heads"),
        ("softmax_scale 0", lambda: flashtune.attention(q, q, q, softmax_scale=0.0), "softmax_scale"),
    ]
    for name, call, needle in cases:
        try:
            call()
            record("errors", name, False, "no exception")
        except flashtune.InvalidArgument as e:
            record("errors", name, needle in str(e), str(e)[:160])
        except Exception as e:  # noqa: BLE001
            record("errors", name, False, f"{type(e).__name__}: {e}")
    try:
        _, lse = flashtune.attention(q.detach().requires_grad_(), q, q, return_lse=True)
        lse.sum().backward()
        record("errors", "gradient through lse", False, "no exception")
    except NotImplementedError as e:
        record("errors", "gradient through lse", "through lse" in str(e), str(e)[:120])


def cuda_graph(dev):
    q, k, v = (torch.randn(2, 1024, 16, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture: loads the kernel
        flashtune.attention(q, k, v, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o_static, lse_static = flashtune.attention(q, k, v, causal=True, return_lse=True)
    for trial in range(2):
        for t in (q, k, v):
            t.copy_(torch.randn_like(t))
        g.replay()
        torch.cuda.synchronize()
        o_eager, lse_eager = flashtune.attention(q, k, v, causal=True, return_lse=True)
        same = torch.equal(o_static, o_eager) and torch.equal(lse_static, lse_eager)
        record("graph", f"captured call replayed on new inputs ({trial + 1})", same,
               "bitwise equal to eager" if same else f"max diff {(o_static - o_eager).abs().max().item():.2e}")


class Block(torch.nn.Module):
    """A small attention block: qkv projection, attention, output projection."""

    def __init__(self, dim, heads, kv_heads, attention):
        super().__init__()
        self.heads, self.kv_heads, self.d = heads, kv_heads, dim // heads
        self.qkv = torch.nn.Linear(dim, (heads + 2 * kv_heads) * self.d, bias=False)
        self.out = torch.nn.Linear(dim, dim, bias=False)
        self.attention = attention

    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).split([self.heads * self.d, self.kv_heads * self.d, self.kv_heads * self.d], dim=-1)
        q = q.view(B, N, self.heads, self.d)
        k = k.view(B, N, self.kv_heads, self.d)
        v = v.view(B, N, self.kv_heads, self.d)
        return self.out(self.attention(q, k, v).reshape(B, N, -1))


def compiled(dev):
    import torch._dynamo
    block = Block(1024, 16, 4, lambda q, k, v: flashtune.attention(q, k, v, causal=True)).to(dev, torch.bfloat16)
    torch._dynamo.utils.counters.clear()
    fn = torch.compile(block, fullgraph=True, dynamic=True)
    with torch.no_grad():
        for n in (512, 777):
            x = torch.randn(2, n, 1024, device=dev, dtype=torch.bfloat16)
            t0 = time.time()
            y = fn(x)
            torch.cuda.synchronize()
            took = time.time() - t0
            ref = block(x)
            err = rel_err(y, ref.double())
            breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
            record("compile", f"fullgraph dynamic, qkv views, GQA, N{n}", err <= 2e-2 and breaks == 0,
                   f"rel L2 vs eager {err:.2e}, graph breaks {breaks}, first call {took:.1f} s")


def host_us(fn, calls=400, rounds=7):
    """Median host microseconds per call of fn over `rounds` loops of `calls` (queued, not waited on)."""
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def overhead(dev):
    q, k, v = (torch.randn(1, 128, 8, 64, device=dev, dtype=torch.bfloat16) for _ in range(3))
    rt = flashtune.default_runtime()
    o = torch.empty_like(q)
    args = pack_args(q, k, v, o)
    stream = torch.cuda.current_stream().cuda_stream
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    from torch.nn.attention import SDPBackend, sdpa_kernel
    paths = {
        "C ABI ft_forward (ctypes, packed once)": lambda: rt.forward_packed(args, stream),
        "flashtune.attention": lambda: flashtune.attention(q, k, v),
        "flashtune.attention return_lse": lambda: flashtune.attention(q, k, v, return_lse=True),
        "torch.ops.flashtune.attention (dispatcher)": lambda: torch.ops.flashtune.attention(q, k, v, False, 0.0, 0),
    }
    with torch.no_grad():
        for f in paths.values():
            f()
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            def sdpa():
                return F.scaled_dot_product_attention(qt, kt, vt)
            sdpa()
            paths["SDPA flash (for scale)"] = sdpa
            times = {name: host_us(f) for name, f in paths.items()}
        kernel_ms = bench(lambda: rt.forward_packed(args, stream), 50, 0.02)
    report_host(times, "C ABI ft_forward (ctypes, packed once)", "flashtune.attention", "flashtune.attention",
                f"kernel {kernel_ms * 1e3:.1f} us, B1 N128 H8 d64")
    return times, kernel_ms


def report_host(times, base_name, call_name, label, shape):
    """Prints each path's host time over the C ABI launch `base_name`, and records whether
    `call_name` stays within 10 us of it."""
    base = times[base_name]
    for name, us in times.items():
        print(f"    host {us:7.2f} us/call  (+{us - base:5.2f} over the C ABI launch)  {name}", flush=True)
    extra = times[call_name] - base
    record("overhead", f"{label} host time beyond the C ABI launch <= 10 us", extra <= 10.0,
           f"+{extra:.2f} us (C ABI {base:.2f} us/call, {shape})")


def layout_overhead(dev):
    """Host time of attention_with_kvcache (paged decode, B1 x 2k, the call an engine makes per layer
    per token) and attention_varlen against ft_forward_ex on the same arguments packed once."""
    from flashtune import layouts
    rt = flashtune.default_runtime()
    stream = torch.cuda.current_stream().cuda_stream
    q = torch.randn(1, 1, 32, 128, device=dev, dtype=torch.bfloat16)
    pages = torch.randn(128, 16, 8, 128, device=dev, dtype=torch.bfloat16)
    table = torch.randperm(128, device=dev).to(torch.int32).view(1, 128)
    lens = torch.tensor([2048], dtype=torch.int32, device=dev)
    call = layouts._kvcache_args(q, pages, pages, lens, table, 0, False, 0.0)
    o = torch.empty_like(q)
    ws = rt.workspace_bytes(call.layout, call.problem)
    workspace = torch.empty(max(ws, 1), dtype=torch.uint8, device=dev)
    args = layouts._pack_call(call, o, None, (workspace.data_ptr(), ws))
    qv = torch.randn(1024, 16, 128, device=dev, dtype=torch.bfloat16)
    cu = torch.tensor([0, 100, 1024], dtype=torch.int32, device=dev)
    paths = {
        "C ABI ft_forward_ex paged (packed once)": lambda: rt.forward_ex_packed(args, stream),
        "flashtune.attention_with_kvcache paged": lambda: flashtune.attention_with_kvcache(q, pages, pages, lens, table),
        "flashtune.attention_varlen (B2, 1024 rows)": lambda: flashtune.attention_varlen(qv, qv, qv, cu, cu, 924, 924),
    }
    # Where attention_with_kvcache's host time goes, part by part (each timed alone, in a loop).
    parts = {
        "checks (_kvcache_args)": lambda: layouts._kvcache_args(q, pages, pages, lens, table, 0, False, 0.0),
        "o = torch.empty_like(q)": lambda: torch.empty_like(q),
        f"workspace torch.empty({ws})": lambda: torch.empty(ws, dtype=torch.uint8, device=dev),
        "pack (_pack_call)": lambda: layouts._pack_call(call, o, None, (workspace.data_ptr(), ws)),
        "stream (_raw_stream)": lambda: layouts._raw_stream(0),
    }
    with torch.no_grad():
        for f in paths.values():
            f()
        times = {name: host_us(f) for name, f in paths.items()}
        part_times = {name: host_us(f) for name, f in parts.items()}
    report_host(times, "C ABI ft_forward_ex paged (packed once)", "flashtune.attention_with_kvcache paged",
                "attention_with_kvcache", "paged decode B1 x 2k Hq32 Hkv8 d128")
    for name, us in part_times.items():
        print(f"    part {us:7.2f} us/call  {name}", flush=True)


def grid(dev, reps):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    for D in (64, 128):
        for N in (1024, 4096, 16384):
            for causal in (False, True):
                B, H = 16384 // N, 2048 // D
                q, k, v = (torch.randn(B, N, H, D, device=dev, dtype=torch.bfloat16) for _ in range(3))
                qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
                flops = 4 * B * H * N * N * D / (2 if causal else 1)
                ms, outs = {}, {}
                with torch.no_grad():
                    ms["flashtune"] = bench(lambda: flashtune.attention(q, k, v, causal=causal), reps, 0.05)
                    outs["flashtune"] = flashtune.attention(q, k, v, causal=causal)
                    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                        try:
                            with sdpa_kernel(backend):
                                call = lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)  # noqa: E731
                                outs[name] = call().transpose(1, 2)
                                ms[name] = bench(call, reps, 0.05)
                        except RuntimeError as e:
                            ms[name] = float("nan")
                            print(f"    {name} failed: {str(e).splitlines()[0][:120]}")
                ref = outs.get("cudnn", outs.get("flash"))
                err = rel_err(outs["flashtune"], ref.double()) if ref is not None else float("nan")
                tf = {n: flops / t / 1e9 for n, t in ms.items()}
                plan = flashtune.plan(q, k, v, causal=causal)
                rows.append((D, N, causal, tf, err, plan))
                record("grid", f"bf16 d{D} N{N} B{B} H{H} {'causal' if causal else 'full'}", err <= 2e-2,
                       f"TFLOP/s flashtune {tf['flashtune']:.0f} flash {tf['flash']:.0f} cudnn {tf['cudnn']:.0f}; "
                       f"rel L2 vs SDPA {err:.1e}; {plan.variant_uri} ({plan.source_name})")
                q = k = v = qt = kt = vt = outs = None  # freed (the timed calls named them)
    return rows


def tune_small(out_dir):
    db = os.path.join(out_dir, "python_tune.db")
    t0 = time.time()
    try:
        flashtune.tune(dtypes=["bf16"], head_dims=[64], causal=False, seqlens_q=[256], hidden=512, tokens=512,
                       db=db, strategy="budgeted", budget_total=6)
        with flashtune.Runtime(db) as rt:
            plan = rt.plan(flashtune.Problem("bf16", 64, 2, 256, 8))
        record("tune", "flashtune.tune then Runtime(db).plan is exact", plan.source_name == "exact",
               f"{plan.variant_uri} ({plan.source_name}, {plan.tuned_median_us:.1f} us) in {time.time() - t0:.0f} s")
    except flashtune.FlashtuneError as e:
        record("tune", "flashtune.tune", False, str(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--deadline-s", type=float, default=170, help="skip sections that start after this")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.cuda.init()
    print(f"torch {torch.__version__} CUDA {torch.version.cuda} cuDNN {torch.backends.cudnn.version()} on "
          f"{torch.cuda.get_device_name()}; flashtune {flashtune.version()} from {flashtune.library_path()}", flush=True)
    overhead_times = grid_rows = None
    sections = [("correct", lambda: correctness(dev)), ("errors", lambda: errors(dev)),
                ("overhead", lambda: overhead(dev)), ("layouts", lambda: layout_overhead(dev)),
                ("graph", lambda: cuda_graph(dev)),
                ("grid", lambda: grid(dev, a.reps)), ("compile", lambda: compiled(dev)),
                ("tune", lambda: tune_small(a.out))]
    for name, run in sections:
        if time.time() - START > a.deadline_s:
            record(name, "section skipped: --deadline-s reached", True, "not run")
            continue
        try:
            result = run()
            if name == "overhead":
                overhead_times = result
            if name == "grid":
                grid_rows = result
        except Exception as e:  # noqa: BLE001
            record(name, "section raised", False, f"{type(e).__name__}: {e}")
    print("\n== summary ==")
    if overhead_times:
        times, kernel_ms = overhead_times
        base = times["C ABI ft_forward (ctypes, packed once)"]
        print(f"host us/call (kernel {kernel_ms * 1e3:.1f} us): " +
              ", ".join(f"{n}: {t:.1f} (+{t - base:.1f})" for n, t in times.items()))
    if grid_rows:
        print(f"{'shape':28s} {'flashtune':>9s} {'flash':>7s} {'cudnn':>7s}  ft/flash ft/cudnn  (TFLOP/s)")
        for D, N, causal, tf, err, plan in grid_rows:
            print(f"bf16 d{D:<3d} N{N:<6d} {'causal' if causal else 'full':7s}    {tf['flashtune']:9.0f} "
                  f"{tf['flash']:7.0f} {tf['cudnn']:7.0f}  {tf['flashtune'] / tf['flash']:8.2f} "
                  f"{tf['flashtune'] / tf['cudnn']:8.2f}")
    failed = [r for r in RESULTS if not r[2]]
    print(f"{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    for section, name, _, detail in failed:
        print(f"FAILED {section}: {name}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
