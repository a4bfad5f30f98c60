#!/usr/bin/env python3
"""Kernel probe: checks and times raw flashtune cubins next to PyTorch SDPA, on the GPU machine.

A development tool for the kernel template, independent of the C++ pipeline: it loads each
`<uri>.cubin` from a folder through the CUDA driver (ctypes), launches it on PyTorch tensors,
checks it against a float64 reference on random data (outputs poisoned first), then times the
variants that passed on FA-2's benchmark grid and prints TFLOP/s beside SDPA's flash and cuDNN
backends measured in the same run.

usage: kernel_probe.py CUBIN_DIR [CUBIN_DIR ...] [--out DIR] [--quick]

With several folders (e.g. two builds of the template), each folder's best variant per shape is
reported side by side under the folder's name: an A/B of template changes in one run.
"""
import argparse
import ctypes
import json
import math
import os
import re
import time

import torch
import torch.nn.functional as F

URI_RE = re.compile(r"fa2_fwd_(bf16|f16)_d(\d+)_br(\d+)_bc(\d+)_w(\d+)_s(\d+)_(causal|full)$")


class Params(ctypes.Structure):
    _fields_ = [("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p),
                ("q_stride", ctypes.c_int64 * 3), ("k_stride", ctypes.c_int64 * 3),
                ("v_stride", ctypes.c_int64 * 3), ("o_stride", ctypes.c_int64 * 3),
                ("batch", ctypes.c_int32), ("seqlen_q", ctypes.c_int32), ("seqlen_k", ctypes.c_int32),
                ("heads_q", ctypes.c_int32), ("heads_kv", ctypes.c_int32), ("scale_log2", ctypes.c_float)]


cuda = ctypes.CDLL("libcuda.so.1")


def check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {name.value.decode() if name.value else rc}")


class Kernel:
    def __init__(self, path, data=None, uri=None, tag=""):
        """Loads `path` (named <uri>.cubin), or the cubin bytes `data` of variant `uri`."""
        self.uri = uri or os.path.basename(path)[:-len(".cubin")]
        self.tag = tag
        m = URI_RE.match(self.uri)
        self.dtype = torch.bfloat16 if m.group(1) == "bf16" else torch.float16
        self.d, self.br, self.bc, self.w, self.s = (int(m.group(i)) for i in range(2, 7))
        self.causal = m.group(7) == "causal"
        self.smem = (self.br + 2 * self.s * self.bc) * (self.d + 8) * 2
        data = data if data is not None else open(path, "rb").read()
        self.module = ctypes.c_void_p()
        check(cuda.cuModuleLoadData(ctypes.byref(self.module), data), "cuModuleLoadData " + self.uri)
        self.fn = ctypes.c_void_p()
        check(cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.module, self.uri.encode()), "cuModuleGetFunction")
        check(cuda.cuFuncSetAttribute(self.fn, 8, self.smem), "cuFuncSetAttribute(max dynamic smem)")
        regs = ctypes.c_int()
        cuda.cuFuncGetAttribute(ctypes.byref(regs), 4, self.fn)
        local = ctypes.c_int()
        cuda.cuFuncGetAttribute(ctypes.byref(local), 3, self.fn)
        self.regs, self.local_bytes = regs.value, local.value

    def __call__(self, q, k, v, o, lse, scale):
        B, Nq, Hq, D = q.shape
        Nk, Hkv = k.shape[1], k.shape[2]
        p = Params(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr() if lse is not None else 0,
                   (ctypes.c_int64 * 3)(q.stride(0), q.stride(1), q.stride(2)),
                   (ctypes.c_int64 * 3)(k.stride(0), k.stride(1), k.stride(2)),
                   (ctypes.c_int64 * 3)(v.stride(0), v.stride(1), v.stride(2)),
                   (ctypes.c_int64 * 3)(o.stride(0), o.stride(1), o.stride(2)),
                   B, Nq, Nk, Hq, Hkv, scale * math.log2(math.e))
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(p), ctypes.c_void_p))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cuda.cuLaunchKernel(self.fn, (Nq + self.br - 1) // self.br, Hq, B, self.w * 32, 1, 1, self.smem,
                                  stream, args, None), "cuLaunchKernel " + self.uri)


def reference(q, k, v, causal, scale):
    """float64 attention, bottom-right causal; rows with no visible key give o = 0, lse = -inf."""
    B, Nq, Hq, D = q.shape
    Nk, Hkv = k.shape[1], k.shape[2]
    qd = q.double().permute(0, 2, 1, 3)
    kd = k.double().repeat_interleave(Hq // Hkv, dim=2).permute(0, 2, 1, 3)
    vd = v.double().repeat_interleave(Hq // Hkv, dim=2).permute(0, 2, 1, 3)
    s = torch.matmul(qd, kd.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(Nq, device=q.device)[:, None]
        j = torch.arange(Nk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (Nk - Nq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None].clamp(min=-1e300))
    p = torch.nan_to_num(p, nan=0.0)
    o = torch.matmul(p, vd).permute(0, 2, 1, 3)
    return o, lse


def make(shape, dtype, head_major=False):
    B, N, H, D = shape
    if head_major:  # non-contiguous: [B, H, N, D] memory viewed as [B, N, H, D]
        return torch.randn(B, H, N, D, device="cuda", dtype=dtype).permute(0, 2, 1, 3)
    return torch.randn(B, N, H, D, device="cuda", dtype=dtype)


CHECK_SHAPES = [  # B, Nq, Nk, Hq, Hkv, head_major
    (1, 1, 1, 1, 1, False), (2, 17, 17, 2, 1, False), (1, 127, 128, 4, 4, True), (1, 128, 1000, 2, 2, False),
    (1, 1000, 127, 8, 1, False), (1, 4097, 4097, 2, 2, True), (3, 300, 700, 8, 8, False),
]


def check_kernel(kern, log):
    worst = 0.0
    for (B, Nq, Nk, Hq, Hkv, hm) in CHECK_SHAPES:
        q = make((B, Nq, Hq, kern.d), kern.dtype, hm)
        k = make((B, Nk, Hkv, kern.d), kern.dtype, hm)
        v = make((B, Nk, Hkv, kern.d), kern.dtype, hm)
        o = torch.full((B, Nq, Hq, kern.d), float("nan"), device="cuda", dtype=kern.dtype)
        lse = torch.full((B, Hq, Nq), float("nan"), device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(kern.d)
        kern(q, k, v, o, lse, scale)
        torch.cuda.synchronize()
        ro, rl = reference(q, k, v, kern.causal, scale)
        if torch.isnan(o).any() or torch.isnan(lse).any():
            log.write(f"{kern.uri} shape {B, Nq, Nk, Hq, Hkv, hm}: NaN/unwritten output\n")
            return float("inf")
        err = ((o.double() - ro).norm() / ro.norm().clamp(min=1e-30)).item()
        fin = torch.isfinite(rl)
        if not torch.equal(fin, torch.isfinite(lse)):
            log.write(f"{kern.uri} shape {B, Nq, Nk, Hq, Hkv, hm}: lse -inf pattern differs\n")
            return float("inf")
        lerr = ((lse.double()[fin] - rl[fin]).abs() / rl[fin].abs().clamp(min=1.0)).max().item() if fin.any() else 0.0
        log.write(f"{kern.uri} shape {B, Nq, Nk, Hq, Hkv, hm}: o_err {err:.2e} lse_err {lerr:.2e}\n")
        worst = max(worst, err, lerr * 10)
    return worst


def bench(fn, reps=30, warmup_s=0.05, queued=True):
    """Median milliseconds of `reps` calls of fn, each bracketed by CUDA events on the current
    stream, after a warm-up of warmup_s seconds (shared by compare_torch.py and perf_report.py).

    queued (the default): the timed calls are queued back to back and synchronised once at the
    end, so each event pair times the GPU's work for one call while the host is ahead of it, as
    in a training step; a call whose host side is slower than its kernel still shows it (the
    GPU waits between its events). queued=False synchronises after every call, so each call
    starts on an idle GPU and its time also holds the host's launch latency (the Python call,
    the library's dispatch): 10-40 µs more on every system, a large share of a short kernel's
    time (session 18, docs/perf-notes.md)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t_end = time.time() + warmup_s
    while time.time() < t_end:  # synchronised: queued launches would spill into the timed calls
        fn()
        torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in events:
        a.record()
        fn()
        b.record()
        if not queued:
            b.synchronize()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in events)
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cubins", nargs="+")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--quick", action="store_true", help="N in 512, 2048, 8192 only")
    ap.add_argument("--grid", help="comma-separated sequence lengths, e.g. 1024,4096,16384")
    a = ap.parse_args()
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    log = open(os.path.join(a.out, "probe_check.log"), "w")
    kernels = []
    tags = [os.path.basename(os.path.normpath(d)) for d in a.cubins]
    for folder, tag in zip(a.cubins, tags):
        for f in sorted(os.listdir(folder)):
            if not f.endswith(".cubin"):
                continue
            try:
                kern = Kernel(os.path.join(folder, f), tag=tag)
            except RuntimeError as e:
                print("LOAD FAIL", tag, f, e)
                continue
            err = check_kernel(kern, log)
            tol = 1e-2 if kern.dtype == torch.bfloat16 else 2e-3
            ok = err <= tol
            print(f"{'ok  ' if ok else 'FAIL'} {tag:8s} {kern.uri:45s} regs {kern.regs:3d} local {kern.local_bytes:4d} "
                  f"worst {err:.2e}", flush=True)
            if ok:
                kernels.append(kern)
    log.flush()
    results = []
    grid = [512, 2048, 8192] if a.quick else [512, 1024, 2048, 4096, 8192, 16384]
    if a.grid:
        grid = [int(n) for n in a.grid.split(",")]
    classes = sorted({(k.dtype, k.d, k.causal) for k in kernels}, key=str)
    for (dtype, d, causal) in classes:
        for n in grid:
            shapes = [(16384 // n, n, 2048 // d)]
            if d == 128 and n == 8192:
                shapes.append((1, 8192, 32))
            for (B, N, H) in shapes:
                q, k, v = (torch.randn(B, N, H, d, device="cuda", dtype=dtype) for _ in range(3))
                o = torch.empty_like(q)
                lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
                flops = 4 * B * H * N * N * d / (2 if causal else 1)
                qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                row = {"dtype": str(dtype).split(".")[-1], "d": d, "causal": causal, "B": B, "N": N, "H": H}
                for name, backend in (("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION),
                                      ("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION)):
                    try:
                        with torch.nn.attention.sdpa_kernel(backend):
                            ms = bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
                        row[name] = flops / ms / 1e9
                    except Exception:  # a backend may not support a shape
                        row[name] = float("nan")
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                    ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                best = {tag: (0.0, "") for tag in tags}
                for kern in kernels:
                    if (kern.dtype, kern.d, kern.causal) != (dtype, d, causal):
                        continue
                    o.fill_(float("nan"))
                    kern(q, k, v, o, lse, 1 / math.sqrt(d))
                    torch.cuda.synchronize()
                    err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                    ms = bench(lambda: kern(q, k, v, o, lse, 1 / math.sqrt(d)))
                    tf = flops / ms / 1e9
                    row.setdefault("variants", {})[kern.tag + "/" + kern.uri] = {"tflops": tf, "err_vs_torch": err}
                    if err < 2e-2 and tf > best[kern.tag][0]:
                        best[kern.tag] = (tf, kern.uri)
                row["best"] = {tag: {"tflops": tf, "uri": uri} for tag, (tf, uri) in best.items()}
                results.append(row)
                cells = "  ".join(f"{tag} {tf:6.1f} x{tf / row['flash']:.2f} {uri[len('fa2_fwd_'):]}"
                                  for tag, (tf, uri) in best.items())
                print(f"{row['dtype']:8s} d{d:3d} {'causal' if causal else 'full  '} B{B:2d} N{N:5d} H{H:2d} "
                      f"flash {row['flash']:6.1f} cudnn {row['cudnn']:6.1f}  {cells}", flush=True)
                q = k = v = o = lse = None  # freed (the timed lambdas named them)
    json.dump(results, open(os.path.join(a.out, "probe_results.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
