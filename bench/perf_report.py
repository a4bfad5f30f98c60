#!/usr/bin/env python3
"""flashtune through its runtime API against PyTorch SDPA (flash = FA-2, cuDNN, efficient), in one run.

On the GPU machine (python3 with torch and matplotlib):
  1. a tuning database: --db DB is reused as it is; without it, `flashtune tune` (--flashtune)
     tunes the default problem set plus d256 and B1 H32 N8192 d128 into OUT/flashtune.db;
  2. every shape of FA-2's benchmark grid (hidden 2048, B*N = 16k, N 512 ... 16k; d64, d128,
     d256; bf16 and fp16; causal and not) plus B1 H32 N8192 d128 is timed through
     libflashtune.so's C ABI (the flashtune package of python/, torch's current stream) and through SDPA's flash, cuDNN and
     efficient backends: fresh random inputs per shape, warm-up, CUDA events, median of --reps,
     in --rounds rounds with the systems in a rotated order (the median round is kept);
  3. flashtune's output is checked against SDPA flash on every shape (relative L2 <= 2e-2;
     cuDNN, then efficient, when flash cannot run the shape);
  4. OUT/perf_report.{json,csv,png} and the table with ratios and geometric means on stdout,
     then per head dim whether the speed targets are met (TARGET_*, the shapes under each
     named) and the milestone shape's TFLOP/s.
While each system is timed, nvidia-smi samples the SM clock, power and clock-event reasons
(bench/gpu_clocks.py): each shape's JSON row keeps them per system, and the table ends with the
clock each system ran at (a card under back-to-back load runs at its power cap, at a lower clock).
A backend that fails on a shape records NaN and the run goes on; the JSON is rewritten after
every shape, so a run cut short still leaves its results.

FLOPs: 4*B*H*N^2*D per forward, halved for causal (FA-2's convention); TFLOP/s = FLOPs / median.

usage: perf_report.py --lib build/libflashtune.so [--db DB | --flashtune build/flashtune] [--out DIR]
       perf_report.py --plot-only results.json [--out DIR]     (no GPU, no torch: PNG, CSV, table)
Exit status: 0 when flashtune ran and passed the output check on every shape, 1 otherwise, 2 on bad usage.
"""
import argparse
import csv
import datetime
import json
import math
import os
import shlex
import subprocess
import sys
import time

SYSTEMS = ("flashtune", "flash", "cudnn", "efficient")
SYSTEM_LABELS = {"flashtune": "flashtune (runtime API)", "flash": "SDPA flash (FA-2)",
                 "cudnn": "SDPA cuDNN", "efficient": "SDPA efficient"}
SYSTEM_COLORS = {"flashtune": "#d62728", "flash": "#1f77b4", "cudnn": "#2ca02c", "efficient": "#9467bd"}
DTYPE_STYLES = {"bf16": "-", "f16": "--"}
GRID_HIDDEN = 2048
GRID_TOKENS = 16384
GRID_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
GRID_HEAD_DIMS = (64, 128, 256)
GRID_DTYPES = ("bf16", "f16")
TOLERANCE = 2e-2
# The forward family's speed targets (docs/perf-notes.md): per head dim, a geometric mean of at
# least 1.0x cuDNN, no shape under 0.85x cuDNN, and every shape at least 1.5x SDPA flash (FA-2);
# and bf16 d128 non-causal N 16k at 550 TFLOP/s or more (the first milestone).
TARGET_GEOMEAN_X_CUDNN = 1.0
TARGET_MIN_X_CUDNN = 0.85
TARGET_MIN_X_FLASH = 1.5
MILESTONE = (dict(dtype="bf16", head_dim=128, causal=False, seqlen=16384), 550.0)
CSV_COLUMNS = ("dtype", "head_dim", "causal", "batch", "seqlen", "heads", "flashtune", "flash", "cudnn",
               "efficient", "x_flash", "x_cudnn", "err", "ref", "ok", "plan", "plan_source")
NAN = float("nan")


# ---- shapes and arithmetic (no GPU) ---------------------------------------------------------

def grid_shapes(head_dims=GRID_HEAD_DIMS, dtypes=GRID_DTYPES, seqlens=GRID_SEQLENS, extra=True):
    """FA-2's benchmark grid, then B1 H32 N8192 d128 (when extra), as dicts."""
    shapes = []
    for d in head_dims:
        for dt in dtypes:
            for causal in (False, True):
                for n in seqlens:
                    shapes.append(dict(dtype=dt, head_dim=d, causal=causal, batch=GRID_TOKENS // n, seqlen=n,
                                       heads=GRID_HIDDEN // d))
    if extra:
        for dt in dtypes:
            for causal in (False, True):
                shapes.append(dict(dtype=dt, head_dim=128, causal=causal, batch=1, seqlen=8192, heads=32))
    return shapes


def flops(row):
    """4*B*H*N^2*D, halved for causal."""
    f = 4.0 * row["batch"] * row["heads"] * row["seqlen"] ** 2 * row["head_dim"]
    return f / 2 if row["causal"] else f


def is_grid(row):
    """A shape of FA-2's grid as grid_shapes() draws it: B*N = 16k and H = 2048 // D (hidden 2016
    at D 96 and 224, 1920 at D 160, where D does not divide 2048)."""
    return row["batch"] * row["seqlen"] == GRID_TOKENS and row["heads"] == GRID_HIDDEN // row["head_dim"]


def finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def ratio(row, a, b):
    x, y = row["tflops"].get(a, NAN), row["tflops"].get(b, NAN)
    return x / y if finite(x) and finite(y) and y > 0 else NAN


def geomean(values):
    vs = [v for v in values if finite(v) and v > 0]
    return math.exp(sum(math.log(v) for v in vs) / len(vs)) if vs else NAN


def mask_name(causal):
    return "causal" if causal else "full"


def recording_spans(timers, spans):
    """timers, each wrapped to append its (start, end) in time.time() seconds to spans[name]."""
    def wrap(name, fn):
        def run():
            t0 = time.time()
            try:
                return fn()
            finally:
                spans[name].append((t0, time.time()))
        return run
    return {name: wrap(name, fn) for name, fn in timers.items()}


def interleaved(timers, rounds):
    """Times every system of a shape `rounds` times, in a rotated order, and keeps the median round.

    timers: {name: callable returning milliseconds (one timing: warm-up and a median of calls)}.
    Round r starts at system r (mod the count), so no system is always timed first or right after
    the same neighbour: the GPU's clock and power state drift over a shape's timings (timing one
    kernel after another biased the first of a pair by up to 12%, docs/perf-notes.md), and a
    single pass charges that drift to whichever system it lands on. A system whose timer raises
    RuntimeError is dropped from the later rounds with its first error line.
    Returns ({name: median of its rounds' ms}, {name: [ms per round]}, {name: error})."""
    names = list(timers)
    per_round = {n: [] for n in names}
    errors = {}
    for r in range(rounds):
        for j in range(len(names)):
            name = names[(j + r) % len(names)]
            if name in errors:
                continue
            try:
                per_round[name].append(timers[name]())
            except RuntimeError as e:
                errors[name] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
    medians = {}
    for n in names:
        if n in errors or not per_round[n]:
            continue
        ms = sorted(per_round[n])
        medians[n] = ms[(len(ms) - 1) // 2]  # an even count takes the lower middle: no averaging of rounds
    return medians, {n: per_round[n] for n in names if n not in errors}, errors


# ---- JSON (NaN is stored as null: strict JSON) ------------------------------------------------

def _nan_to_none(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def save_json(doc, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_nan_to_none(doc), f, indent=1, allow_nan=False)
    os.replace(tmp, path)


def load_json(path):
    """A results document with every system's TFLOP/s a float (NaN where missing)."""
    with open(path) as f:
        doc = json.load(f)
    systems = doc.get("systems") or list(SYSTEMS)
    doc["systems"] = systems
    for row in doc["rows"]:
        row["tflops"] = {s: (NAN if row.get("tflops", {}).get(s) is None else float(row["tflops"][s]))
                         for s in systems}
        row["err"] = NAN if row.get("err") is None else float(row["err"])
    return doc


# ---- outputs: table, CSV, plot (no GPU) ----------------------------------------------------

def _fmt(x, spec):
    return format(x, spec) if finite(x) else format("nan", ">" + spec.split(".")[0] + "s")


def clock_summary(doc):
    """Per system with clock samples (rows' "clocks", bench/gpu_clocks.py): 'name MHz (lowest;
    capped %)' over the shapes, where MHz is the median of the shapes' median SM clocks."""
    out = []
    for s in doc["systems"]:
        per = [r["clocks"][s] for r in doc["rows"] if s in (r.get("clocks") or {})]
        if not per:
            continue
        mhz = sorted(c["sm_mhz_median"] for c in per)
        capped = sum(c["capped"] * c["samples"] for c in per) / sum(c["samples"] for c in per)
        out.append(f"{s} {mhz[(len(mhz) - 1) // 2]:.0f} ({mhz[0]:.0f}; {100 * capped:.0f}%)")
    return out


def shape_name(row):
    return f"{row['dtype']} {mask_name(row['causal'])} N{row['seqlen']}" + ("" if is_grid(row) else f" B{row['batch']}")


def target_summary(doc):
    """Lines saying, per head dim, whether flashtune's ratios meet the targets (TARGET_*), naming
    the shapes under each; then the milestone shape's TFLOP/s. Shapes a system did not run on
    are left out of that system's checks."""
    lines = []
    for d in sorted({r["head_dim"] for r in doc["rows"]}):
        rows = [r for r in doc["rows"] if r["head_dim"] == d]
        xc = [(r, ratio(r, "flashtune", "cudnn")) for r in rows]
        xf = [(r, ratio(r, "flashtune", "flash")) for r in rows]
        xc = [(r, x) for r, x in xc if finite(x)]
        xf = [(r, x) for r, x in xf if finite(x)]
        g = geomean([x for _, x in xc])
        low_c = [(r, x) for r, x in xc if x < TARGET_MIN_X_CUDNN]
        low_f = [(r, x) for r, x in xf if x < TARGET_MIN_X_FLASH]
        verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
        line = (f"d{d:<4d} targets: geomean x cudnn >= {TARGET_GEOMEAN_X_CUDNN:g} "
                f"{verdict(finite(g) and g >= TARGET_GEOMEAN_X_CUDNN)}; "
                f"x cudnn >= {TARGET_MIN_X_CUDNN:g} on {len(xc) - len(low_c)}/{len(xc)}; "
                f"x flash >= {TARGET_MIN_X_FLASH:g} on {len(xf) - len(low_f)}/{len(xf)}")
        lines.append(line)
        for what, low in (("x cudnn", low_c), ("x flash", low_f)):
            if low:
                lines.append(f"  under on {what}: " + ", ".join(f"{shape_name(r)} {x:.2f}" for r, x in low))
    want, floor = MILESTONE
    for r in doc["rows"]:
        if is_grid(r) and all(r[k] == v for k, v in want.items()):
            t = r["tflops"].get("flashtune", NAN)
            lines.append(f"milestone: {shape_name(r)} d{r['head_dim']} {_fmt(t, '.1f')} TFLOP/s "
                         f"(>= {floor:g}: {'met' if finite(t) and t >= floor else 'NOT met'})")
    return lines


def format_table(doc):
    """The per-shape table with ratios, then geometric means per head dim, as one string."""
    systems = doc["systems"]
    lines = []
    meta = doc.get("meta", {})
    lines.append(f"# {meta.get('gpu', '?')}, {meta.get('date', '?')}; TFLOP/s (forward, 4*B*H*N^2*D, causal halved)")
    head = (f"{'dtype':5s} {'D':>3s} {'mask':6s} {'B':>3s} {'N':>6s} {'H':>3s} "
            + " ".join(f"{s:>9s}" for s in systems)
            + f" {'x flash':>7s} {'x cudnn':>7s} {'err':>8s} {'ok':>4s}  plan")
    lines.append(head)
    for r in doc["rows"]:
        ok = r.get("ok")
        lines.append(f"{r['dtype']:5s} {r['head_dim']:3d} {mask_name(r['causal']):6s} {r['batch']:3d} "
                     f"{r['seqlen']:6d} {r['heads']:3d} "
                     + " ".join(_fmt(r["tflops"].get(s, NAN), "9.1f") for s in systems)
                     + f" {_fmt(ratio(r, 'flashtune', 'flash'), '7.2f')} {_fmt(ratio(r, 'flashtune', 'cudnn'), '7.2f')}"
                     + f" {_fmt(r.get('err', NAN), '8.1e')} {('yes' if ok else 'NO' if ok is not None else '-'):>4s}"
                     + f"  {r.get('plan') or ''}")
    lines.append("")
    lines.append("geometric means of flashtune's ratio (shapes where both ran):")
    for d in sorted({r["head_dim"] for r in doc["rows"]}):
        rows = [r for r in doc["rows"] if r["head_dim"] == d]
        xf = [ratio(r, "flashtune", "flash") for r in rows]
        xc = [ratio(r, "flashtune", "cudnn") for r in rows]
        lines.append(f"d{d:<4d} x flash {_fmt(geomean(xf), '5.2f')} ({sum(finite(x) for x in xf)} shapes)   "
                     f"x cudnn {_fmt(geomean(xc), '5.2f')} ({sum(finite(x) for x in xc)} shapes)")
    lines.extend(target_summary(doc))
    clocked = clock_summary(doc)
    if clocked:
        lines.append("SM clock while timed, median over shapes (lowest shape; share of samples at a power cap): "
                     + ", ".join(clocked))
    checked = [r for r in doc["rows"] if r.get("ok") is not None]
    passed = [r for r in checked if r.get("ok")]
    lines.append(f"output check vs torch (relative L2 <= {TOLERANCE:g}): {len(passed)}/{len(checked)} shapes pass")
    failed = [r for r in doc["rows"] if not finite(r["tflops"].get("flashtune"))]
    if failed:
        lines.append(f"flashtune did not run on {len(failed)} shape(s)" + "".join(
            f"\n  {r['dtype']} d{r['head_dim']} {mask_name(r['causal'])} B{r['batch']} N{r['seqlen']} H{r['heads']}: "
            + (r.get("errors") or {}).get("flashtune", "no result") for r in failed[:10]))
    return "\n".join(lines)


def write_csv(doc, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in doc["rows"]:
            t = r["tflops"]
            w.writerow([r["dtype"], r["head_dim"], int(bool(r["causal"])), r["batch"], r["seqlen"], r["heads"]]
                       + [f"{t.get(s, NAN):.2f}" for s in ("flashtune", "flash", "cudnn", "efficient")]
                       + [f"{ratio(r, 'flashtune', 'flash'):.4f}", f"{ratio(r, 'flashtune', 'cudnn'):.4f}",
                          f"{r.get('err', NAN):.3e}", r.get("ref") or "",
                          "" if r.get("ok") is None else int(bool(r["ok"])),
                          r.get("plan") or "", r.get("plan_source") or ""])


def missing_grid(doc):
    """Human words for the (head dim, dtype) pairs of FA-2's grid with no measured row."""
    have = {(r["head_dim"], r["dtype"]) for r in doc["rows"] if is_grid(r)
            and any(finite(v) for v in r["tflops"].values())}
    out = []
    for d in GRID_HEAD_DIMS:
        gone = [dt for dt in GRID_DTYPES if (d, dt) not in have]
        if len(gone) == len(GRID_DTYPES):
            out.append(f"d{d}")
        elif gone:
            out.append(f"d{d} " + "/".join("fp16" if g == "f16" else g for g in gone))
    return out


def render_plot(doc, path):
    """TFLOP/s against N (log2), one panel per head dim x mask, one colour per system, line style per dtype.
    Returns False, writing nothing, when no row is of FA-2's grid (the figure is drawn over it)."""
    rows = [r for r in doc["rows"] if is_grid(r)]
    dims = sorted({r["head_dim"] for r in rows})
    if not dims:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    systems = [s for s in doc["systems"] if any(finite(r["tflops"].get(s)) for r in rows)]
    dtypes = [dt for dt in GRID_DTYPES if any(r["dtype"] == dt for r in rows)]
    seqlens = sorted({r["seqlen"] for r in rows})
    ymax = max(v for r in rows for v in r["tflops"].values() if finite(v))
    fig, axes = plt.subplots(len(dims), 2, figsize=(12, 3.9 * len(dims) + 1.2), squeeze=False, sharey=True)
    for i, d in enumerate(dims):
        for j, causal in enumerate((False, True)):
            ax = axes[i][j]
            for s in systems:
                for dt in dtypes:
                    pts = sorted((r["seqlen"], r["tflops"].get(s, NAN)) for r in rows
                                 if r["head_dim"] == d and r["causal"] == causal and r["dtype"] == dt)
                    if not any(finite(y) for _, y in pts):
                        continue
                    ax.plot([x for x, _ in pts], [y for _, y in pts], DTYPE_STYLES[dt], marker="o", markersize=4,
                            color=SYSTEM_COLORS.get(s), linewidth=2 if s == "flashtune" else 1.4)
            ax.set_xscale("log", base=2)
            ax.set_xticks(seqlens)
            ax.set_xticklabels([f"{n // 1024}k" if n >= 1024 else str(n) for n in seqlens])
            ax.minorticks_off()
            ax.set_xlim(seqlens[0] / 1.3, seqlens[-1] * 1.3)
            ax.set_ylim(0, ymax * 1.08)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"head dim {d}, {'causal' if causal else 'non-causal'} (H = {GRID_HIDDEN // d})",
                         fontsize=11)
            ax.set_xlabel("sequence length N (tokens; batch B = 16k / N)")
            if j == 0:
                ax.set_ylabel("forward TFLOP/s")
    labels = dict(SYSTEM_LABELS, **doc.get("meta", {}).get("labels", {}))  # a JSON may rename a system
    handles = [Line2D([], [], color=SYSTEM_COLORS.get(s), linewidth=2, label=labels.get(s, s))
               for s in systems]
    handles += [Line2D([], [], color="0.3", linestyle=DTYPE_STYLES[dt], label="fp16" if dt == "f16" else dt)
                for dt in dtypes]
    meta = doc.get("meta", {})
    fig.suptitle(f"FlashAttention-2 forward on {meta.get('gpu', 'unknown GPU')}, {meta.get('date', '')}: "
                 f"flashtune vs PyTorch SDPA (H = {GRID_HIDDEN} // D, B·N = 16k)", fontsize=13)
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), bbox_to_anchor=(0.5, 1 - 0.42 / fig.get_figheight()),
               frameon=False, fontsize=10)
    timing = doc.get("meta", {}).get("timing", "")
    notes = ["TFLOP/s = 4·B·H·N²·D / time (halved for causal); median of CUDA-event timings"
             + (", calls queued" if "queued" in timing else ", calls synchronised" if "synchronised" in timing else "")]
    gone = missing_grid(doc)
    if gone:
        notes.append("not measured: " + ", ".join(gone))
    fig.text(0.5, 0.08 / fig.get_figheight(), "; ".join(notes), ha="center", fontsize=9, color="0.25")
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight(), 1, 1 - 0.6 / fig.get_figheight()))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_outputs(doc, out_dir, stem):
    """JSON is written by the caller; here the CSV, the PNG and the table. Returns the table."""
    write_csv(doc, os.path.join(out_dir, stem + ".csv"))
    if not render_plot(doc, os.path.join(out_dir, stem + ".png")):  # the measurement stands
        print(f"no plot: no row of FA-2's grid (H = {GRID_HIDDEN} // D, B*N = 16k) among the shapes", flush=True)
    return format_table(doc)


# ---- the GPU run -------------------------------------------------------------------------

def tune(flashtune, db, log_path, timeout_s, d256_seqlens):
    """The default problem set plus d256 and B1 H32 N8192 d128 into db; returns one line per command.

    d256 is tuned at d256_seqlens only (its space is slow to time); other N use the runtime's
    nearest tuned bucket, which the report's plan_source column shows."""
    runs = [[], ["--head-dims", "256", "--seqlens", d256_seqlens], ["--head-dims", "128", "--seqlens", "8192", "--hidden", "4096",
                                         "--tokens", "8192"]]
    out = []
    with open(log_path, "a") as log:
        for extra in runs:
            cmd = [flashtune, "tune", "--db", db] + extra
            start = time.time()
            try:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            except OSError as e:
                rc = f"cannot run: {e}"
            out.append(f"{shlex.join(cmd)}: exit {rc}, {time.time() - start:.0f} s")
            print(out[-1], flush=True)
    return out


def gpu_meta(torch):
    meta = {"gpu": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": str(torch.backends.cudnn.version())}
    try:
        meta["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        meta["driver"] = "unknown"
    return meta


def measure(a, doc, json_path):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # The Python package from this source tree, over the library named by --lib.
    os.environ["FLASHTUNE_LIB"] = os.path.abspath(a.lib)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flashtune
    from flashtune import FlashtuneError, Problem, Runtime
    from flashtune.ops import pack_args

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    tdtype = {"bf16": torch.bfloat16, "f16": torch.float16}

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kernel_probe import bench as time_calls  # needs torch and the CUDA driver: GPU runs only
    import gpu_clocks

    def bench(fn):
        return time_calls(fn, a.reps, a.warmup_s, queued=a.timing == "queued")

    torch.cuda.init()
    torch.zeros(1, device="cuda")  # torch's primary context is current on this thread: flashtune launches there
    doc["meta"].update(gpu_meta(torch))
    rt = Runtime(doc["meta"]["db"])
    # The SM clock and power while each system is timed: figures belong to a clock regime (a card
    # under back-to-back load runs at its power cap, at a lower clock).
    sampler = gpu_clocks.Sampler.start(50)
    doc["meta"]["clocks"] = ("nvidia-smi every 50 ms while each system was timed" if sampler.why_not is None
                             else f"not sampled: {sampler.why_not}")
    doc["meta"]["flashtune"] = flashtune.version()
    shapes = grid_shapes(a.head_dims, a.dtypes, a.seqlens, extra=not a.no_extra)
    started = time.time()
    gen = torch.Generator(device="cuda")
    try:
        for idx, s in enumerate(shapes):
            if a.time_limit_s and time.time() - started > a.time_limit_s:
                doc["meta"]["cut_short"] = f"--time-limit-s {a.time_limit_s} reached after {idx} of {len(shapes)} shapes"
                print(doc["meta"]["cut_short"], flush=True)
                break
            row = dict(s, tflops={n: NAN for n in SYSTEMS}, ms={}, errors={}, err=NAN, ref=None, ok=None,
                       plan=None, plan_source=None, wall_s={})  # wall_s: where this script's time goes
            B, N, H, D = s["batch"], s["seqlen"], s["heads"], s["head_dim"]
            f = flops(s)
            try:
                gen.manual_seed(1000 + idx)
                q, k, v = (torch.randn(B, N, H, D, device="cuda", dtype=tdtype[s["dtype"]], generator=gen)
                           for _ in range(3))
                o = torch.full_like(q, NAN)  # a kernel that writes nothing fails the check
                lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
                qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # SDPA's [B, H, N, D] views
            except RuntimeError as e:
                row["errors"]["inputs"] = str(e).splitlines()[0]
                doc["rows"].append(row)
                save_json(doc, json_path)
                continue

            # Each backend runs once for its output (the reference), then every system that ran
            # is timed in interleaved rounds (interleaved()); wall_s is where this script's time goes.
            refs, timers = {}, {}
            for name, backend in backends.items():
                t_start = time.time()
                try:
                    with sdpa_kernel(backend):
                        refs[name] = F.scaled_dot_product_attention(qt, kt, vt, is_causal=s["causal"]).transpose(1, 2).float()

                    def timed(backend=backend, causal=s["causal"]):
                        with sdpa_kernel(backend):
                            return bench(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
                    timers[name] = timed
                except RuntimeError as e:
                    row["errors"][name] = str(e).splitlines()[0][:300]
                    refs.pop(name, None)
                torch.cuda.synchronize()
                row["wall_s"][name] = round(time.time() - t_start, 3)
            t_start = time.time()
            try:
                info = rt.plan(Problem(s["dtype"], D, B, N, H, causal=s["causal"]))
                row["plan"], row["plan_source"] = info.variant_uri, info.source_name
                # Arguments packed once: the timed calls are bare C ABI launches.
                args = pack_args(q, k, v, o, lse, s["causal"])
                stream = torch.cuda.current_stream().cuda_stream
                rt.forward_packed(args, stream)  # checked call, also the first use
                torch.cuda.synchronize()
                ref_name = next((n for n in ("flash", "cudnn", "efficient") if n in refs), None)
                if ref_name is not None:
                    ref = refs[ref_name]
                    row["ref"] = ref_name
                    row["err"] = ((o.float() - ref).norm() / ref.norm()).item()
                    row["ok"] = bool(row["err"] <= TOLERANCE)

                def timed_flashtune():
                    try:
                        return bench(lambda: rt.forward_packed(args, stream))
                    except FlashtuneError as e:
                        raise RuntimeError(str(e)) from e
                timers["flashtune"] = timed_flashtune
            except (FlashtuneError, RuntimeError) as e:
                row["errors"]["flashtune"] = str(e).splitlines()[0][:300]
            row["wall_s"]["flashtune"] = round(time.time() - t_start, 3)
            refs = None  # the reference outputs are not needed while timing
            t_start = time.time()
            spans = {n: [] for n in timers}  # each timing's (start, end), for the clock samples
            medians, row["ms_rounds"], timing_errors = interleaved(recording_spans(timers, spans), a.rounds)
            samples = sampler.since(t_start)
            row["clocks"] = {n: c for n in medians if (c := gpu_clocks.summarize(samples, spans[n])) is not None}
            row["errors"].update(timing_errors)
            for name, ms in medians.items():
                row["ms"][name] = ms
                row["tflops"][name] = f / ms / 1e9
            row["wall_s"]["timing"] = round(time.time() - t_start, 3)
            doc["rows"].append(row)
            save_json(doc, json_path)
            t = row["tflops"]
            print(f"[{idx + 1}/{len(shapes)}] {s['dtype']} d{D} {mask_name(s['causal'])} B{B} N{N} H{H}: "
                  + " ".join(f"{n} {t[n]:.1f}" for n in SYSTEMS)
                  + f"  err {row['err']:.1e} ({row['ref']})  {row['plan']} ({row['plan_source']})"
                  + "  wall " + " ".join(f"{n} {w:.1f}s" for n, w in row["wall_s"].items())
                  + ("  MHz " + " ".join(f"{n} {c['sm_mhz_median']:.0f}" for n, c in row["clocks"].items())
                     if row["clocks"] else "")
                  + ("  errors: " + "; ".join(f"{k}: {v}" for k, v in row["errors"].items()) if row["errors"] else ""),
                  flush=True)
            torch.cuda.empty_cache()
    finally:
        rt.close()
        sampler.stop()


def int_list(text):
    return tuple(int(x) for x in text.split(",") if x)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plot-only", metavar="RESULTS_JSON",
                    help="re-render the PNG, CSV and table from a results JSON (no GPU, no torch)")
    ap.add_argument("--lib", help="libflashtune.so (the runtime's C ABI)")
    ap.add_argument("--db", help="a tuning database to reuse; without it this run tunes into OUT/flashtune.db")
    ap.add_argument("--flashtune", default="flashtune", help="the flashtune binary, for tuning (default: on PATH)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="output folder (default $OUT or .)")
    ap.add_argument("--stem", default=None, help="output file name stem (default perf_report, or the JSON's name)")
    ap.add_argument("--head-dims", type=int_list, default=GRID_HEAD_DIMS, help="comma list (default 64,128,256)")
    ap.add_argument("--dtypes", type=lambda t: tuple(t.split(",")), default=GRID_DTYPES, help="bf16,f16")
    ap.add_argument("--seqlens", type=int_list, default=GRID_SEQLENS, help="N values (default 512..16384)")
    ap.add_argument("--no-extra", action="store_true", help="leave out B1 H32 N8192 d128")
    ap.add_argument("--reps", type=int, default=30, help="timed calls per system and shape (>= 30)")
    ap.add_argument("--warmup-s", type=float, default=0.05, help="warm-up time per system, shape and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timings per system and shape, in a rotated order; the median round is reported (>= 1)")
    ap.add_argument("--timing", choices=("queued", "sync"), default="queued",
                    help="queued: the timed calls back to back, one synchronisation at the end (the GPU's time "
                         "per call); sync: each call synchronised, so its time holds the host's launch latency "
                         "(kernel_probe.bench)")
    ap.add_argument("--tune-timeout-s", type=int, default=900, help="limit per `flashtune tune` command")
    ap.add_argument("--tune-d256-seqlens", default="1024,4096,16384", help="N values tuned for d256")
    ap.add_argument("--time-limit-s", type=float, default=0, help="stop starting new shapes after this long (0: none)")
    a = ap.parse_args(argv)
    if a.stem is None:
        a.stem = os.path.splitext(os.path.basename(a.plot_only))[0] if a.plot_only else "perf_report"
    os.makedirs(a.out, exist_ok=True)

    if a.plot_only:
        doc = load_json(a.plot_only)
        print(write_outputs(doc, a.out, a.stem))
        return 0

    if not a.lib:
        ap.error("--lib is required (the path of libflashtune.so), unless --plot-only is given")
    if a.reps < 30:
        ap.error(f"--reps must be >= 30, got {a.reps}")
    if a.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {a.rounds}")
    if any(dt not in GRID_DTYPES for dt in a.dtypes):
        ap.error(f"--dtypes takes bf16 and f16, got {','.join(a.dtypes)}")
    doc = {"meta": {"command": shlex.join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])),
                    "timing": f"CUDA events on torch's current stream, warm-up {a.warmup_s} s, median of {a.reps} "
                              + ("calls queued back to back" if a.timing == "queued" else "calls, each synchronised")
                              + f"; {a.rounds} rounds per shape, the systems in a rotated order, the median round"
                              + "; flashtune through libflashtune.so's ft_forward (the python/ package)",
                    "flops": "4*B*H*N^2*D, halved for causal"},
           "systems": list(SYSTEMS), "rows": []}
    if a.db:
        doc["meta"]["db"] = os.path.abspath(a.db)
        doc["meta"]["tuning"] = "reused " + a.db
    else:
        db = os.path.join(os.path.abspath(a.out), "flashtune.db")
        doc["meta"]["db"] = db
        doc["meta"]["tuning"] = tune(a.flashtune, db, os.path.join(a.out, "tune.log"), a.tune_timeout_s,
                                     a.tune_d256_seqlens)
    json_path = os.path.join(a.out, a.stem + ".json")
    measure(a, doc, json_path)
    save_json(doc, json_path)
    table = write_outputs(load_json(json_path), a.out, a.stem)
    print()
    print(table)
    bad = [r for r in doc["rows"] if r.get("ok") is False or not finite(r["tflops"]["flashtune"])]
    return 1 if bad or not doc["rows"] else 0


if __name__ == "__main__":
    sys.exit(main())
