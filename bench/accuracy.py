#!/usr/bin/env python3
"""flashtune's forward output against a float64 reference, beside PyTorch SDPA's flash and cuDNN.

The GPU tests check each variant against a float64 reference with a tolerance; this script says
how close each system comes, so that a kernel change that loses precision without failing a
tolerance shows. For every (dtype, head dim, causal, N) it draws random normal Q, K, V, computes
softmax(Q K^T / sqrt(D)) V in float64 on the GPU, and reports each system's relative L2 error
and largest absolute error against it. flashtune runs through its runtime API (the Python package
of python/ over --lib) with the database given (untuned defaults when it does not exist).

A row fails when flashtune's relative error exceeds --max-ratio times the larger of SDPA flash's
and cuDNN's on the same inputs (a system that did not run is left out; with neither, the row
passes only under perf_report.py's tolerance, 2e-2).

usage: accuracy.py --lib build/libflashtune.so [--db DB] [--head-dims 64,96,...] [--dtypes bf16,f16]
                   [--seqlens 512,4096] [--batch 2] [--heads 4] [--max-ratio 2.0] [--json FILE]
Exit status: 0 when every row passes, 1 when one fails or flashtune did not run, 2 on bad usage.
"""
import argparse
import json
import math
import os
import sys

FALLBACK_TOLERANCE = 2e-2


def verdict(errors, max_ratio):
    """(ok, why) for one row. errors: {system: relative L2 error or None (did not run)}."""
    ours = errors.get("flashtune")
    if ours is None or not math.isfinite(ours):
        return False, "flashtune did not run or gave a non-finite error"
    peers = [e for n, e in errors.items() if n != "flashtune" and e is not None and math.isfinite(e)]
    if not peers:
        return ours <= FALLBACK_TOLERANCE, f"no SDPA backend ran; tolerance {FALLBACK_TOLERANCE:g}"
    bound = max_ratio * max(peers)
    return ours <= bound, f"bound {bound:.2e} = {max_ratio:g} x the worse SDPA backend"


def int_list(text):
    try:
        values = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def dtype_list(text):
    values = [x for x in text.split(",") if x]
    bad = [v for v in values if v not in ("bf16", "f16")]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"dtypes must be bf16 and/or f16, got {text!r}")
    return values


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="libflashtune.so to run")
    ap.add_argument("--db", default="/nonexistent/flashtune-accuracy.db",
                    help="tuning database (a path that does not exist: untuned defaults)")
    ap.add_argument("--head-dims", type=int_list, default=[64, 96, 128, 160, 192, 224, 256])
    ap.add_argument("--dtypes", type=dtype_list, default=["bf16", "f16"])
    ap.add_argument("--seqlens", type=int_list, default=[512, 4096])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--max-ratio", type=float, default=2.0)
    ap.add_argument("--json", help="write the rows here as JSON")
    a = ap.parse_args(argv)
    if a.batch <= 0 or a.heads <= 0:
        ap.error("--batch and --heads must be positive")
    if not (a.max_ratio >= 1.0):
        ap.error(f"--max-ratio must be >= 1, got {a.max_ratio}")
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    os.environ["FLASHTUNE_LIB"] = os.path.abspath(a.lib)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flashtune
    from flashtune import FlashtuneError, Problem, Runtime
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kernel_probe import reference  # float64 attention on the GPU (needs torch: imported here)

    torch.zeros(1, device="cuda")  # torch's context current on this thread: flashtune launches there
    rt = Runtime(a.db)
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    tdtype = {"bf16": torch.bfloat16, "f16": torch.float16}
    gen = torch.Generator(device="cuda")
    rows, failed, seed = [], 0, 1000
    print(f"{torch.cuda.get_device_name()}; flashtune {flashtune.version()}; B{a.batch} H{a.heads}; "
          f"relative L2 error (largest absolute error) against float64")
    print(f"{'shape':<26s} {'flashtune':>20s} {'flash':>20s} {'cudnn':>20s}  ok  plan")
    for dt in a.dtypes:
        for d in a.head_dims:
            for causal in (False, True):
                for n in a.seqlens:
                    seed += 1
                    gen.manual_seed(seed)
                    q, k, v = (torch.randn(a.batch, n, a.heads, d, device="cuda", dtype=tdtype[dt], generator=gen)
                               for _ in range(3))
                    ref = reference(q, k, v, causal, 1 / math.sqrt(d))[0]
                    norm = ref.norm().item()
                    outs, errors, worst, plan = {}, {}, {}, ""
                    try:
                        plan = rt.plan(Problem(dt, d, a.batch, n, a.heads, causal=causal)).variant_uri
                        outs["flashtune"] = flashtune.attention(q, k, v, causal=causal, runtime=rt)
                    except (FlashtuneError, RuntimeError) as e:
                        plan = "error: " + str(e).splitlines()[0][:200]
                    for name, backend in backends.items():
                        try:
                            with sdpa_kernel(backend):
                                outs[name] = F.scaled_dot_product_attention(
                                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                    is_causal=causal).transpose(1, 2)
                        except RuntimeError:
                            pass
                    for name in ("flashtune", "flash", "cudnn"):
                        if name in outs:
                            diff = outs[name].double() - ref
                            errors[name] = diff.norm().item() / norm
                            worst[name] = diff.abs().max().item()
                        else:
                            errors[name], worst[name] = None, None
                    ok, why = verdict(errors, a.max_ratio)
                    failed += not ok
                    cell = lambda s: (f"{errors[s]:.2e} ({worst[s]:.1e})" if errors[s] is not None else "-")
                    shape = f"{dt} d{d} {'causal' if causal else 'full'} N{n}"
                    print(f"{shape:<26s} {cell('flashtune'):>20s} {cell('flash'):>20s} {cell('cudnn'):>20s}"
                          f"  {'yes' if ok else 'NO':>3s}  {plan}" + ("" if ok else f"  ({why})"), flush=True)
                    rows.append(dict(dtype=dt, head_dim=d, causal=causal, seqlen=n, batch=a.batch, heads=a.heads,
                                     rel_l2=errors, max_abs=worst, ok=ok, why=why, plan=plan))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "max_ratio": a.max_ratio, "rows": rows}, f, indent=1)
    print(f"{len(rows) - failed} of {len(rows)} rows pass (flashtune's error at most {a.max_ratio:g}x the worse "
          f"SDPA backend's)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
