#!/usr/bin/env python3
"""Decode bandwidth on the GPU: flashtune (ft_forward_ex, dense and paged K/V) against PyTorch
SDPA (flash and cuDNN backends) and a streaming read, all in the same run.

One query token per sequence, bf16, d128, Hq 32, Hkv 8 (by default), batch x keys over the
given grid. Reported: microseconds (CUDA events, median of 30 after a warm-up), K+V bytes read
per second (B * Nk * Hkv * D * 2 bytes * 2 tensors / time; times are per call replayed from a
CUDA graph, so the host's launch overhead is out, as in engines that run graphs; eager times
are in the JSON) and its fraction of the streaming
read bandwidth measured here: the faster of torch.sum over a 4 GiB fp32 tensor and a plain
read kernel (CuPy, when present: 16-byte loads, grid-stride, 4 in flight per thread), reads only.
--baseline LIB[,LIB...] times other libflashtunes (e.g. main's, before a change; each named by
its folder) on the same inputs (dense and paged) right after this one, for an A/B in one run
(each plan is its own; LIB@DB opens that library's runtime on database DB, else on none). K/V copies are
rotated so one pass reads more than 3x the L2, except where one copy alone exceeds it.
flashtune's output is checked against SDPA flash's on every shape (relative L2 error).
--rounds R times every system of a shape R times, the order rotated by one each round
(bench/perf_report.py's interleaved: the card's heating falls on each in turn): each time is the
median over the rounds, and "dense x cudnn" adds the per-round ratios' median and range.

usage: decode_bench.py LIBFLASHTUNE [--db DB] [--out DIR] [--batches 1,8,64] [--keys 2048,...]
       [--layouts dense,dense-lens,paged16,paged256] [--baseline LIB[@DB][,LIB[@DB]...]] [--rounds R]
dense-lens: the dense cache with every sequence's length passed in memory (seqlens_k, as
flash_attn_with_kvcache's cache_seqlens), which the kernel can only read after the wait for the
kernel before it.
(the C ABI through the Python package's ctypes layer, python/flashtune/_capi.py)
"""
import argparse
import ctypes
import json
import math
import os
import random
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_report import interleaved  # noqa: E402


class Runtime:
    """One ft_runtime for ft_forward_ex / ft_workspace_size (the package's Runtime serves the
    dense ft_forward path)."""

    def __init__(self, lib_path, db):
        os.environ["FLASHTUNE_LIB"] = lib_path
        from flashtune import _capi
        self.capi = _capi
        self.lib = _capi.library()
        self.handle = ctypes.c_void_p()
        self.check(_capi.function("ft_runtime_open")(db.encode() if db else None, ctypes.byref(self.handle)),
                   "ft_runtime_open")
        self.forward_ex_fn = _capi.function("ft_forward_ex")

    def check(self, status, what):
        self.capi.check(status, what)

    def workspace_size(self, args):
        size = ctypes.c_int64()
        self.check(self.capi.function("ft_workspace_size")(self.handle, ctypes.byref(args), ctypes.byref(size)),
                   "ft_workspace_size")
        return size.value

    def forward_ex(self, args, stream):
        self.check(self.forward_ex_fn(self.handle, ctypes.byref(args), ctypes.c_void_p(stream or None)),
                   "ft_forward_ex")

class Baseline:
    """Another libflashtune through ctypes alone (no package state): ft_forward_ex with the
    version-1 ft_attention_args (a library older than the mixed-batch fields knows only it)."""

    def __init__(self, lib_path, capi, db=None):
        self.lib = ctypes.CDLL(os.path.abspath(lib_path), mode=ctypes.RTLD_LOCAL)
        self.lib.ft_last_error.restype = ctypes.c_char_p
        self.lib.ft_runtime_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.ft_forward_ex.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.ft_workspace_size.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]
        self.handle = ctypes.c_void_p()
        self.check(self.lib.ft_runtime_open(db.encode() if db else None, ctypes.byref(self.handle)),
                   "ft_runtime_open")
        self.v1_size = capi.AttentionArgs.decode_seqs.offset

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"baseline {what}: {self.lib.ft_last_error().decode()}")

    def args(self, args):
        """A copy of `args` declared as version 1, with this library's workspace size."""
        copy = type(args).from_buffer_copy(args)
        copy.struct_size = self.v1_size
        size = ctypes.c_int64()
        self.check(self.lib.ft_workspace_size(self.handle, ctypes.byref(copy), ctypes.byref(size)), "ft_workspace_size")
        return copy, size.value


def kernel_read_tbps():
    """A plain streaming read over 4 GiB (CuPy's NVRTC): None when CuPy is not there."""
    try:
        import cupy
    except ImportError:
        return None
    src = r"""
extern "C" __global__ void read_all(const uint4* __restrict__ x, long long n, unsigned* out) {
  unsigned acc = 0;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = __ldcs(x + i), b = __ldcs(x + i + stride), c = __ldcs(x + i + 2 * stride), d = __ldcs(x + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) { uint4 a = __ldcs(x + i); acc ^= a.x ^ a.y ^ a.z ^ a.w; }
  if (acc == 0x12345678u) out[0] = acc;  // keeps the loads
}
"""
    kern = cupy.RawKernel(src, "read_all")
    x = torch.ones(1 << 30, device="cuda", dtype=torch.float32)  # 4 GiB
    out = torch.zeros(1, device="cuda", dtype=torch.int32)
    n = (4 << 30) // 16
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = (sms * 8,)
    args = (cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(x.data_ptr(), 4 << 30, x), 0),
            cupy.int64(n), cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(out.data_ptr(), 4, out), 0))
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    def run(i):
        with stream:
            kern(grid, (512,), args)
    ms = bench(run, 1, reps=20, warmup=3)
    del x
    return (4 << 30) / ms / 1e9


BACKENDS = (("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION),
            ("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION))
L2_BYTES = 50 << 20


def layout_args(rt, layout, problem, q, k, v, o, keep, lse=None):
    """ft_attention_args for one K/V layout of the dense k, v ([B, Nk, Hkv, D]): dense; dense-lens
    (every sequence's length, Nk, in memory as seqlens_k); pagedN (the keys on N-key pages in
    shuffled order, page p of sequence b holding its keys [p*N, (p+1)*N), lengths in memory).
    The tensors the args point at are appended to `keep`."""
    B, nk, hkv, d = k.shape
    fields = {} if lse is None else {"lse": lse.data_ptr()}
    if layout != "dense":
        seqlens = torch.full((B,), nk, device=k.device, dtype=torch.int32)
        keep.append(seqlens)
        fields["seqlens_k"] = seqlens.data_ptr()
    if layout.startswith("paged"):
        bs = int(layout[len("paged"):])
        if nk % bs:
            raise SystemExit(f"{layout}: keys ({nk}) must be a multiple of the block size")
        per_seq = nk // bs
        table = torch.randperm(B * per_seq, device=k.device, dtype=torch.int32).view(B, per_seq).contiguous()
        kp = torch.empty(B * per_seq, bs, hkv, d, device=k.device, dtype=k.dtype)
        vp = torch.empty_like(kp)
        kp[table.view(-1).long()] = k.reshape(-1, bs, hkv, d)
        vp[table.view(-1).long()] = v.reshape(-1, bs, hkv, d)
        keep.extend((table, kp, vp))
        k, v = kp, vp
        fields.update(block_table=table.data_ptr(), block_size=bs, max_blocks_per_seq=per_seq,
                      block_table_stride=per_seq, num_blocks=B * per_seq)
    elif layout not in ("dense", "dense-lens"):
        raise SystemExit(f"layout {layout!r} is not dense, dense-lens or pagedN")
    return rt.capi.AttentionArgs.make("paged" if layout.startswith("paged") else "dense", problem, q=q.data_ptr(),
                                      k=k.data_ptr(), v=v.data_ptr(), o=o.data_ptr(), q_strides=q.stride()[:3],
                                      k_strides=k.stride()[:3], v_strides=v.stride()[:3], o_strides=o.stride()[:3],
                                      **fields)


def bench(fn, n_inputs, reps=30, warmup=10):
    """Median ms of fn(i) over reps calls, inputs rotated, after warm-up calls."""
    for i in range(warmup):
        fn(i % n_inputs)
    torch.cuda.synchronize()
    times = []
    for r in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(r % n_inputs)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def bench_graph(fn, n_inputs, reps=20):
    """Median ms per call of fn(i) replayed from a CUDA graph of >= 20 calls (inputs rotated):
    the GPU's time without the host's launch overhead, as an engine running graphs sees it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(n_inputs):
            fn(i)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    calls = n_inputs * max(1, math.ceil(20 / n_inputs))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i % n_inputs)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    times.sort()
    del graph
    return times[len(times) // 2]


def timed(fn, n_inputs, row, key):
    """Eager and graph medians into row[key + '_eager_us'] and row[key + '_us'] (graph; eager
    when capture fails)."""
    row[key + "_eager_us"] = bench(fn, n_inputs) * 1e3
    try:
        row[key + "_us"] = bench_graph(fn, n_inputs) * 1e3
    except RuntimeError as e:
        print(f"  {key}: graph capture failed ({str(e).splitlines()[0]}); eager time used", flush=True)
        row[key + "_us"] = row[key + "_eager_us"]


def stream_read_tbps():
    """(best, {method: TB/s}): torch.sum and the read kernel over 4 GiB."""
    x = torch.ones(1 << 30, device="cuda", dtype=torch.float32)  # 4 GiB
    ms = bench(lambda i: x.sum(), 1, reps=20, warmup=3)
    x = None  # the 4 GiB freed (the timed lambda named it)
    got = {"torch.sum": (4 << 30) / ms / 1e9}
    try:
        k = kernel_read_tbps()
        if k:
            got["read kernel"] = k
    except Exception as e:  # a missing compiler or CuPy build: torch.sum alone
        print(f"  read kernel: {e}", flush=True)
    torch.cuda.empty_cache()
    return max(got.values()), got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--db", default="")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--keys", default="2048,8192,32768,131072")
    ap.add_argument("--heads-q", type=int, default=32)
    ap.add_argument("--heads-kv", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--seqlen-q", type=int, default=1)
    ap.add_argument("--layouts", default="dense,paged16,paged256",
                    help="dense, dense-lens (dense with seqlens_k in memory), pagedN (N-key pages)")
    ap.add_argument("--max-kv-gib", type=float, default=20.0, help="skip shapes whose K+V exceed this")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every system of a shape this many times, in rotated order (medians; per-round ratios)")
    ap.add_argument("--baseline", default="",
                    help="other libflashtunes (comma-separated; each named by its folder; LIB@DB opens it on "
                         "database DB) timed on the same inputs (A/B)")
    a = ap.parse_args()
    if a.rounds < 1:
        raise SystemExit(f"--rounds must be 1 or more, not {a.rounds}")
    torch.manual_seed(0)
    random.seed(0)
    dev = torch.device("cuda")
    rt = Runtime(os.path.abspath(a.lib), a.db or None)
    Problem = rt.capi.Problem
    stream = torch.cuda.current_stream().cuda_stream
    read_tbps, reads = stream_read_tbps()
    print("streaming read (4 GiB): " + ", ".join(f"{k} {v:.2f} TB/s" for k, v in reads.items()), flush=True)
    # (name, Baseline): the first keeps the JSON's base_* keys; every one gets base_<name>_*.
    bases = []
    for x in (x for x in a.baseline.split(",") if x):
        lib, _, db = x.partition("@")
        bases.append((os.path.basename(os.path.dirname(os.path.abspath(lib))), Baseline(lib, rt.capi, db or None)))
    hq, hkv, d, nq = a.heads_q, a.heads_kv, a.head_dim, a.seqlen_q
    rows, results = [], []
    for B in (int(x) for x in a.batches.split(",")):
        for nk in (int(x) for x in a.keys.split(",")):
            kv_bytes = 2 * B * nk * hkv * d * 2
            if kv_bytes > a.max_kv_gib * (1 << 30):
                print(f"B{B} x {nk}: K+V {kv_bytes / 2**30:.1f} GiB > --max-kv-gib; skipped", flush=True)
                continue
            copies = max(1, min(4, math.ceil(3 * L2_BYTES / kv_bytes)))
            q = torch.randn(B, nq, hq, d, device=dev, dtype=torch.bfloat16)
            o = torch.empty_like(q)
            lse = torch.empty(B, hq, nq, device=dev, dtype=torch.float32)
            dense = [(torch.randn(B, nk, hkv, d, device=dev, dtype=torch.bfloat16),
                      torch.randn(B, nk, hkv, d, device=dev, dtype=torch.bfloat16)) for _ in range(copies)]
            # SDPA wants [B, H, N, D]; transposed views read the same bytes.
            qt = q.transpose(1, 2)
            ref = None
            row = {"batch": B, "keys": nk, "kv_bytes": kv_bytes, "copies": copies}
            # Every system of the shape is set up first, then timed in rounds (below): each one
            # a (key, measure) pair, measure(dst) writing dst[key + "_us"] and "_eager_us".
            systems = []
            for name, backend in BACKENDS:
                def call(i, backend=backend):
                    k, v = dense[i]
                    return F.scaled_dot_product_attention(qt, k.transpose(1, 2), v.transpose(1, 2),
                                                          enable_gqa=hq != hkv)

                def measure(dst, call=call, backend=backend, name=name):
                    with torch.nn.attention.sdpa_kernel(backend):
                        timed(call, copies, dst, name)
                try:
                    with torch.nn.attention.sdpa_kernel(backend):
                        out = call(0)
                    if name == "flash":
                        ref = out.transpose(1, 2).float()
                    systems.append((name, measure))
                except RuntimeError as e:
                    row[name + "_us"] = float("nan")
                    print(f"  {name}: {str(e).splitlines()[0]}", flush=True)
            problem = Problem(rt.capi.DTYPES["bf16"], d, 0, B, nq, nk, hq, hkv)
            keep = []  # what the args point at (seqlens, tables, page pools, workspaces)
            for layout in a.layouts.split(","):
                args_list = [layout_args(rt, layout, problem, q, k, v, o, keep, lse=lse) for k, v in dense]
                ws_bytes = rt.workspace_size(args_list[0])
                ws = torch.empty(max(ws_bytes, 16), device=dev, dtype=torch.uint8)
                for args in args_list:
                    args.workspace = ws.data_ptr()
                    args.workspace_bytes = ws_bytes
                refs = [ctypes.byref(x) for x in args_list]
                keep.extend((args_list, ws, refs))
                o.fill_(float("nan"))
                rt.forward_ex(args_list[0], stream)
                torch.cuda.synchronize()
                row[layout + "_err"] = ((o.float() - ref).norm() / ref.norm()).item()
                row[layout + "_ws"] = ws_bytes

                def call(i, refs=refs):  # on the current stream: the graph's capture stream while capturing
                    rc = rt.forward_ex_fn(rt.handle, refs[i], ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
                    if rc != 0:
                        rt.check(rc, "ft_forward_ex")
                systems.append((layout, lambda dst, call=call, layout=layout: timed(call, copies, dst, layout)))
                for bi, (bname, base) in enumerate(bases):
                    pairs = [base.args(x) for x in args_list]
                    base_ws = torch.empty(max(pairs[0][1], 16), device=dev, dtype=torch.uint8)
                    for x, size in pairs:
                        x.workspace, x.workspace_bytes = base_ws.data_ptr(), size
                    base_refs = [ctypes.byref(x) for x, _ in pairs]
                    keep.extend((pairs, base_ws, base_refs))

                    def base_call(i, base=base, base_refs=base_refs):
                        base.check(base.lib.ft_forward_ex(base.handle, base_refs[i],
                                                          ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)),
                                   "ft_forward_ex")
                    o.fill_(float("nan"))
                    base_call(0)
                    torch.cuda.synchronize()
                    # Dense: base_<name>_* (as before paged baselines); paged: pbase_<name>_<layout>_*.
                    key = "base_" + bname if layout == "dense" else f"pbase_{bname}_{layout}"
                    row[key + "_err"] = ((o.float() - ref).norm() / ref.norm()).item()
                    systems.append((key, lambda dst, f=base_call, key=key: timed(f, copies, dst, key)))
                    if bi == 0 and layout == "dense":
                        row["base_err"] = row[key + "_err"]
            # perf_report.interleaved's rounds: round r starts at system r, so that none is
            # always first after the set-up or right after the same other; each time is the
            # median over the rounds, and a ratio's spread is that of the per-round ratios
            # (paired: both timed within the same round).
            eager = {key: [] for key, _ in systems}

            def timer(key, measure):
                def run():
                    got = {}
                    measure(got)
                    eager[key].append(got[key + "_eager_us"])
                    return got[key + "_us"]
                return run
            medians, per_round, errors = interleaved({key: timer(key, m) for key, m in systems}, a.rounds)
            for key, _ in systems:
                if key in errors:
                    row[key + "_us"] = row[key + "_eager_us"] = float("nan")
                    print(f"  {key}: {errors[key]}", flush=True)
                    continue
                row[key + "_us"] = medians[key]
                row[key + "_eager_us"] = sorted(eager[key])[(len(eager[key]) - 1) // 2]
                if a.rounds > 1:
                    row[key + "_rounds_us"] = per_round[key]
            if bases and "base_" + bases[0][0] + "_us" in row:
                row["base_us"] = row["base_" + bases[0][0] + "_us"]
            if a.rounds > 1 and "dense" in per_round and "cudnn" in per_round:
                row["dense_x_cudnn_rounds"] = [c / d for c, d in zip(per_round["cudnn"], per_round["dense"])]
            del keep
            results.append(row)
            tb = lambda us: kv_bytes / (us * 1e-6) / 1e12  # noqa: E731
            line = f"B{B:<3d} {nk:>6d}"
            for layout in a.layouts.split(","):
                us = row[layout + "_us"]
                line += f" | {layout:8s} {us:8.1f} us {tb(us):5.2f} TB/s {tb(us) / read_tbps * 100:5.1f}% err {row[layout + '_err']:.1e}"
            for name, _ in BACKENDS:
                us = row[name + "_us"]
                line += f" | {name} {tb(us):5.2f}"
            cudnn = tb(row["cudnn_us"])
            if cudnn == cudnn and "dense_us" in row:  # (--layouts without dense: no such ratio)
                line += f" | dense x cudnn {tb(row['dense_us']) / cudnn:.2f}"
                if "dense_x_cudnn_rounds" in row:  # the per-round ratios' median [least, most]
                    per = row["dense_x_cudnn_rounds"]
                    line += f" (rounds {statistics.median(per):.3f} [{min(per):.3f}, {max(per):.3f}])"
            for bname, _ in bases:
                for layout in a.layouts.split(","):
                    us = row[f"base_{bname}_us" if layout == "dense" else f"pbase_{bname}_{layout}_us"]
                    line += f" | {bname} {layout} {us:8.1f} us, new/{bname} time {row[layout + '_us'] / us:.3f}"
            rows.append(line)
            print(line, flush=True)
            q = o = lse = dense = ref = systems = per_round = None  # freed (the timed calls named them)
            torch.cuda.empty_cache()
    json.dump({"read_tbps": read_tbps, "reads": reads, "rows": results}, open(os.path.join(a.out, "decode_bench.json"), "w"), indent=1)
    print(f"\nstreaming read {read_tbps:.2f} TB/s; K+V TB/s and % of it; torch SDPA in TB/s of the same bytes")
    for line in rows:
        print(line)
    bad = [r for r in results for layout in a.layouts.split(",") if not (r[layout + "_err"] < 2e-2)]
    bad += [r for r in results for bname, _ in bases for layout in a.layouts.split(",")
            if not (r[f"base_{bname}_err" if layout == "dense" else f"pbase_{bname}_{layout}_err"] < 2e-2)]
    print(f"output check vs SDPA flash: {'all within 2e-2' if not bad else f'{len(bad)} outside 2e-2'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
