#!/usr/bin/env python3
"""CPU tests of bench/perf_report.py's non-GPU parts.

Needs matplotlib, not torch and not a GPU. With FLASHTUNE_LIB set to libflashtune.so, the
flashtune package of python/ is also checked the way perf_report.py imports it (from the source
tree, over that library; no GPU needed: plans fall back to the heuristic).
Run by ctest (label cpu); by hand: python3 bench/perf_report_test.py
"""
import contextlib
import csv
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "perf_report.py")
PACKAGE_DIR = os.path.join(HERE, "..", "python")
sys.path.insert(0, HERE)
sys.path.insert(0, PACKAGE_DIR)

import perf_report  # noqa: E402


def fixture():
    """d64 and d128, bf16 and f16, full and causal, N 512/1024/2048 of FA-2's grid, plus B1 H32 N8192.

    flashtune is 0.9x flash and 0.5x cuDNN everywhere, except one row where flash is missing (NaN)
    and one row that failed the output check."""
    rows = []
    for d in (64, 128):
        for dt in ("bf16", "f16"):
            for causal in (False, True):
                for n in (512, 1024, 2048):
                    flash = 200.0 + n / 64 + d
                    rows.append({"dtype": dt, "head_dim": d, "causal": causal, "batch": 16384 // n, "seqlen": n,
                                 "heads": 2048 // d,
                                 "tflops": {"flashtune": 0.9 * flash, "flash": flash, "cudnn": 1.8 * flash,
                                            "efficient": 0.6 * flash},
                                 "err": 1e-3, "ref": "flash", "ok": True, "plan": f"fa2_fwd_{dt}_d{d}_x",
                                 "plan_source": "exact"})
    rows[3]["tflops"]["flash"] = None  # the backend raised on this shape
    rows[5]["ok"], rows[5]["err"] = False, 0.5
    rows.append({"dtype": "bf16", "head_dim": 128, "causal": False, "batch": 1, "seqlen": 8192, "heads": 32,
                 "tflops": {"flashtune": 270.0, "flash": 300.0, "cudnn": 540.0, "efficient": None},
                 "err": 2e-3, "ref": "flash", "ok": True, "plan": "p", "plan_source": "nearest"})
    return {"meta": {"gpu": "Test GPU", "date": "2026-01-02"}, "systems": list(perf_report.SYSTEMS), "rows": rows}


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


class PerfReportArithmetic(unittest.TestCase):
    def test_grid_is_fa2s_benchmark_grid_plus_the_long_shape(self):
        shapes = perf_report.grid_shapes()
        self.assertEqual(len(shapes), 3 * 2 * 2 * 6 + 4)
        grid = [s for s in shapes if perf_report.is_grid(s)]
        self.assertEqual(len(grid), 72)
        self.assertTrue(all(s["batch"] * s["seqlen"] == 16384 and s["heads"] * s["head_dim"] == 2048 for s in grid))
        self.assertEqual({s["seqlen"] for s in grid}, {512, 1024, 2048, 4096, 8192, 16384})
        extra = [s for s in shapes if not perf_report.is_grid(s)]
        self.assertEqual({(s["batch"], s["heads"], s["seqlen"], s["head_dim"]) for s in extra}, {(1, 32, 8192, 128)})

    def test_head_dims_that_do_not_divide_the_hidden_size_are_grid_rows(self):
        # d96 / d160 / d224 get H = 2048 // D (hidden 2016 / 1920 / 2016): still the grid, so
        # the plot and the targets cover them (a d96-only report once failed with "no row to plot").
        shapes = perf_report.grid_shapes(head_dims=(96, 160, 224), extra=False)
        self.assertEqual(len(shapes), 3 * 2 * 2 * 6)
        self.assertTrue(all(perf_report.is_grid(s) for s in shapes))
        self.assertEqual({(s["head_dim"], s["heads"]) for s in shapes}, {(96, 21), (160, 12), (224, 9)})
        self.assertFalse(perf_report.is_grid(dict(shapes[0], heads=22)))

    def test_flops_are_halved_for_causal(self):
        s = {"batch": 2, "heads": 3, "seqlen": 1024, "head_dim": 64, "causal": False}
        self.assertEqual(perf_report.flops(s), 4 * 2 * 3 * 1024 * 1024 * 64)
        self.assertEqual(perf_report.flops(dict(s, causal=True)), 2 * 2 * 3 * 1024 * 1024 * 64)

    def test_geomean_skips_missing_values(self):
        self.assertAlmostEqual(perf_report.geomean([0.5, 2.0, float("nan"), None]), 1.0)
        self.assertTrue(math.isnan(perf_report.geomean([float("nan")])))

    def test_json_stores_nan_as_null_and_reads_it_back_as_nan(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            perf_report.save_json(fixture(), path)
            with open(path) as f:
                text = f.read()
            self.assertNotIn("NaN", text)
            json.loads(text)  # strict JSON
            doc = perf_report.load_json(path)
            self.assertTrue(math.isnan(doc["rows"][3]["tflops"]["flash"]))
            self.assertEqual(doc["rows"][0]["tflops"]["flash"], 200.0 + 8 + 64)


class Interleaved(unittest.TestCase):
    """perf_report.interleaved: the systems of a shape timed in rotated rounds, the median kept."""

    def recorder(self, values):
        """Timers that log their calls in order and return values[name][call index]."""
        self.calls = []
        counts = {}

        def make(name):
            def timer():
                i = counts.get(name, 0)
                counts[name] = i + 1
                self.calls.append(name)
                v = values[name][i]
                if isinstance(v, Exception):
                    raise v
                return v
            return timer
        return {name: make(name) for name in values}

    def test_each_round_starts_one_system_later(self):
        timers = self.recorder({"a": [1.0] * 3, "b": [2.0] * 3, "c": [3.0] * 3})
        perf_report.interleaved(timers, 3)
        self.assertEqual(self.calls, ["a", "b", "c", "b", "c", "a", "c", "a", "b"])

    def test_the_median_round_is_kept_not_the_mean(self):
        timers = self.recorder({"a": [5.0, 1.0, 9.0], "b": [2.0, 40.0, 3.0]})
        medians, rounds, errors = perf_report.interleaved(timers, 3)
        self.assertEqual(medians, {"a": 5.0, "b": 3.0})
        self.assertEqual(rounds, {"a": [5.0, 1.0, 9.0], "b": [2.0, 40.0, 3.0]})
        self.assertEqual(errors, {})

    def test_two_rounds_keep_the_faster_one(self):
        medians, _, _ = perf_report.interleaved(self.recorder({"a": [4.0, 3.0]}), 2)
        self.assertEqual(medians, {"a": 3.0})

    def test_a_system_that_raises_is_dropped_with_its_error_and_the_others_go_on(self):
        timers = self.recorder({"a": [1.0, 1.5, 2.0], "b": [RuntimeError("CUDA error: out of memory\nmore")],
                                "c": [7.0, 8.0, 9.0]})
        medians, rounds, errors = perf_report.interleaved(timers, 3)
        self.assertEqual(medians, {"a": 1.5, "c": 8.0})
        self.assertNotIn("b", rounds)
        self.assertEqual(errors, {"b": "CUDA error: out of memory"})
        self.assertEqual(self.calls.count("b"), 1)

    def test_one_round_is_one_pass_in_the_given_order(self):
        timers = self.recorder({"x": [2.0], "y": [1.0]})
        medians, _, _ = perf_report.interleaved(timers, 1)
        self.assertEqual(self.calls, ["x", "y"])
        self.assertEqual(medians, {"x": 2.0, "y": 1.0})


class FakeTensor:
    """What measure() does with a tensor: views, float(), differences, norms."""

    def __init__(self, value=1.0):
        self.value = value

    def transpose(self, *_):
        return self

    def float(self):
        return self

    def __sub__(self, other):
        return FakeTensor(self.value - other.value)

    def __truediv__(self, other):
        return FakeTensor(self.value / other.value)

    def norm(self):
        return FakeTensor(abs(self.value))

    def item(self):
        return self.value


def fake_modules(times, sdpa_fails=(), flashtune_output=1.0):
    """sys.modules entries that stand in for torch, the flashtune package and kernel_probe.

    times[system]: the milliseconds each timing of that system returns, in turn; a backend named
    in sdpa_fails raises when SDPA runs under it. Returns (modules, the order systems were timed)."""
    import contextlib
    import types
    order, current = [], {"backend": None}
    torch = types.ModuleType("torch")
    torch.__version__, torch.version, torch.float32, torch.bfloat16, torch.float16 = "0", types.SimpleNamespace(cuda="13.0"), "f32", "bf16", "f16"
    torch.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91900))
    torch.cuda = types.SimpleNamespace(init=lambda: None, synchronize=lambda: None, empty_cache=lambda: None,
                                       get_device_name=lambda: "Fake GPU",
                                       current_stream=lambda: types.SimpleNamespace(cuda_stream=0))
    torch.zeros = lambda *a, **k: FakeTensor()
    torch.randn = lambda *a, **k: FakeTensor()
    torch.empty = lambda *a, **k: FakeTensor()
    torch.full_like = lambda t, v: FakeTensor(v)
    torch.Generator = lambda device: types.SimpleNamespace(manual_seed=lambda seed: None)
    nn, functional, attention = types.ModuleType("torch.nn"), types.ModuleType("torch.nn.functional"), types.ModuleType("torch.nn.attention")

    def sdpa(q, k, v, is_causal):
        if current["backend"] in sdpa_fails:
            raise RuntimeError(f"No available kernel for {current['backend']}\nmore")
        return FakeTensor(1.0)
    functional.scaled_dot_product_attention = sdpa
    attention.SDPBackend = types.SimpleNamespace(FLASH_ATTENTION="flash", CUDNN_ATTENTION="cudnn",
                                                 EFFICIENT_ATTENTION="efficient")

    @contextlib.contextmanager
    def sdpa_kernel(backend):
        current["backend"] = backend
        try:
            yield
        finally:
            current["backend"] = None
    attention.sdpa_kernel = sdpa_kernel
    torch.nn, nn.functional, nn.attention = nn, functional, attention

    flashtune = types.ModuleType("flashtune")
    ops = types.ModuleType("flashtune.ops")

    class FlashtuneError(Exception):
        pass

    class Runtime:
        def __init__(self, db):
            self.closed = False

        def plan(self, problem):
            return types.SimpleNamespace(variant_uri="hopper_fwd_x", source_name="exact")

        def forward_packed(self, args, stream):
            args["o"].value = flashtune_output

        def close(self):
            self.closed = True
    flashtune.FlashtuneError, flashtune.Runtime, flashtune.version = FlashtuneError, Runtime, lambda: "0.1.0"
    flashtune.Problem = lambda *a, **k: (a, k)
    ops.pack_args = lambda q, k, v, o, lse, causal: {"o": o}
    flashtune.ops = ops
    kernel_probe = types.ModuleType("kernel_probe")

    def bench(fn, reps, warmup_s, queued):
        fn()
        system = current["backend"] or "flashtune"
        order.append(system)
        return times[system].pop(0)
    kernel_probe.bench = bench
    return ({"torch": torch, "torch.nn": nn, "torch.nn.functional": functional, "torch.nn.attention": attention,
             "flashtune": flashtune, "flashtune.ops": ops, "kernel_probe": kernel_probe}, order)


class MeasureOnFakes(unittest.TestCase):
    """measure()'s flow per shape, on stand-ins for torch and the library (no GPU)."""

    def run_measure(self, modules, rounds):
        import argparse
        from unittest import mock
        a = argparse.Namespace(lib="libflashtune.so", head_dims=(64,), dtypes=("bf16",), seqlens=(512,), no_extra=True,
                               time_limit_s=0, reps=30, warmup_s=0.0, timing="queued", rounds=rounds)
        doc = {"meta": {"db": "x.db"}, "rows": []}
        # measure() sets FLASHTUNE_LIB and puts python/ on sys.path: both restored after.
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(sys.modules, modules), \
                mock.patch.dict(os.environ), mock.patch.object(sys, "path", list(sys.path)), \
                mock.patch.object(perf_report.subprocess, "run", side_effect=OSError("no nvidia-smi")), \
                contextlib.redirect_stdout(io.StringIO()):
            perf_report.measure(a, doc, os.path.join(tmp, "r.json"))
            with open(os.path.join(tmp, "r.json")) as f:
                self.assertEqual(len(json.load(f)["rows"]), len(doc["rows"]))  # rewritten after every shape
        return doc

    def test_every_system_timed_in_rotated_rounds_and_the_median_round_kept(self):
        times = {"flash": [2.0, 2.2, 2.1] * 2, "cudnn": [1.0, 1.4, 1.2] * 2, "efficient": [5.0, 5.0, 5.0] * 2,
                 "flashtune": [1.1, 0.9, 1.3] * 2}
        modules, order = fake_modules(times)
        doc = self.run_measure(modules, 3)
        self.assertEqual(len(doc["rows"]), 2)  # full and causal
        self.assertEqual(order[:12], ["flash", "cudnn", "efficient", "flashtune", "cudnn", "efficient", "flashtune",
                                      "flash", "efficient", "flashtune", "flash", "cudnn"])
        row = doc["rows"][0]
        self.assertEqual(row["ms"], {"flash": 2.1, "cudnn": 1.2, "efficient": 5.0, "flashtune": 1.1})
        self.assertEqual(row["ms_rounds"]["flashtune"], [1.1, 0.9, 1.3])
        self.assertAlmostEqual(row["tflops"]["flashtune"], perf_report.flops(row) / 1.1 / 1e9)
        self.assertEqual((row["ok"], row["ref"], row["err"]), (True, "flash", 0.0))
        self.assertEqual(row["errors"], {})

    def test_a_backend_that_cannot_run_is_an_error_and_not_timed(self):
        times = {"flash": [2.0] * 2, "cudnn": [1.0] * 2, "flashtune": [1.5] * 2}
        modules, order = fake_modules(times, sdpa_fails=("efficient",), flashtune_output=1.5)
        doc = self.run_measure(modules, 1)
        row = doc["rows"][0]
        self.assertNotIn("efficient", order)
        self.assertEqual(row["errors"]["efficient"], "No available kernel for efficient")
        self.assertTrue(math.isnan(row["tflops"]["efficient"]))
        self.assertEqual((row["ok"], row["err"]), (False, 0.5))  # o = 1.5 against flash's 1.0: checked, failed


class PerfReportWithoutGridRows(unittest.TestCase):
    def test_the_table_is_written_and_the_plot_skipped_saying_why(self):
        doc = fixture()
        doc["rows"] = [r for r in doc["rows"] if not perf_report.is_grid(r)]  # B1 H32 N8192 alone
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "r.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            doc = perf_report.load_json(path)  # as --plot-only reads a report (None -> NaN)
            with contextlib.redirect_stdout(io.StringIO()) as said:
                table = perf_report.write_outputs(doc, out, "r")
            self.assertIn("no plot: no row of FA-2's grid", said.getvalue())
            self.assertFalse(os.path.exists(os.path.join(out, "r.png")))
            self.assertTrue(os.path.exists(os.path.join(out, "r.csv")))
        self.assertIn("8192", table)


class PerfReportPlotOnly(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.json = os.path.join(cls.tmp.name, "fixture.json")
        with open(cls.json, "w") as f:
            json.dump(fixture(), f)
        cls.out = os.path.join(cls.tmp.name, "out")
        # sys.modules["torch"] = None makes any import of torch fail: --plot-only must not need it.
        code = ("import sys, runpy; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        cls.proc = subprocess.run([sys.executable, "-c", code, SCRIPT, "--plot-only", cls.json, "--out", cls.out],
                                  capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_runs_without_torch(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)

    def test_png_is_written_and_not_trivial(self):
        path = os.path.join(self.out, "fixture.png")
        self.assertTrue(os.path.exists(path), self.proc.stderr)
        width, height = png_size(path)
        self.assertGreater(width, 800)
        self.assertGreater(height, 600)
        self.assertGreater(os.path.getsize(path), 30000)  # four panels of lines, labels, legend

    def test_csv_has_one_row_per_shape_with_ratios(self):
        with open(os.path.join(self.out, "fixture.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(tuple(rows[0].keys()), perf_report.CSV_COLUMNS)
        self.assertEqual(len(rows), len(fixture()["rows"]))
        self.assertAlmostEqual(float(rows[0]["x_flash"]), 0.9, places=3)
        self.assertAlmostEqual(float(rows[0]["x_cudnn"]), 0.5, places=3)
        self.assertEqual(rows[3]["flash"], "nan")
        self.assertEqual(rows[3]["x_flash"], "nan")
        self.assertEqual(rows[5]["ok"], "0")
        self.assertEqual(rows[-1]["efficient"], "nan")

    def test_table_has_ratios_geometric_means_and_the_check(self):
        out = self.proc.stdout
        self.assertIn("x flash", out)
        self.assertIn("x cudnn", out)
        self.assertEqual(sum(1 for line in out.splitlines() if line.startswith(("bf16 ", "f16 "))), 25)
        # d64: 12 shapes, one without flash; d128: 12 grid shapes plus B1 H32 N8192.
        self.assertRegex(out, r"d64\s+x flash\s+0\.90 \(11 shapes\)\s+x cudnn\s+0\.50 \(12 shapes\)")
        self.assertRegex(out, r"d128\s+x flash\s+0\.90 \(13 shapes\)\s+x cudnn\s+0\.50 \(13 shapes\)")
        self.assertIn("24/25 shapes pass", out)
        self.assertNotIn("SM clock", out)  # the fixture has no clock samples

    def test_without_a_json_the_gpu_run_needs_the_library(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--out", self.out], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--lib", proc.stderr)

    def test_rounds_below_one_are_refused(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--lib", "x.so", "--rounds", "0", "--out", self.out],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--rounds must be >= 1, got 0", proc.stderr)

    def test_an_unknown_timing_is_refused_naming_the_choices(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--timing", "eager", "--plot-only", self.json, "--out", self.out],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--timing", proc.stderr)
        self.assertIn("'queued', 'sync'", proc.stderr)


@unittest.skipUnless(os.environ.get("FLASHTUNE_LIB"), "FLASHTUNE_LIB (path of libflashtune.so) not set")
class SourceTreePackage(unittest.TestCase):
    """The package as perf_report.py uses it: python/ on sys.path, the library from FLASHTUNE_LIB."""

    def test_plans_through_the_named_library(self):
        import flashtune
        self.assertEqual(os.path.realpath(os.path.dirname(flashtune.__file__)),
                         os.path.realpath(os.path.join(PACKAGE_DIR, "flashtune")))
        self.assertEqual(flashtune.library_path(), os.environ["FLASHTUNE_LIB"])
        with tempfile.TemporaryDirectory() as tmp, flashtune.Runtime(os.path.join(tmp, "none.db")) as rt:
            plan = rt.plan(flashtune.Problem("bf16", 128, 2, 1024, 16, causal=True))
        self.assertTrue(plan.variant_uri.endswith("_causal"), plan.variant_uri)
        self.assertEqual(plan.source_name, "heuristic")


class RecordingSpans(unittest.TestCase):
    def test_each_timing_appends_its_span_even_when_it_raises(self):
        spans = {"a": [], "b": []}

        def fails():
            raise RuntimeError("no")
        timers = perf_report.recording_spans({"a": lambda: 1.5, "b": fails}, spans)
        self.assertEqual(timers["a"](), 1.5)
        self.assertEqual(timers["a"](), 1.5)
        with self.assertRaises(RuntimeError):
            timers["b"]()
        self.assertEqual(len(spans["a"]), 2)
        self.assertEqual(len(spans["b"]), 1)
        for t0, t1 in spans["a"] + spans["b"]:
            self.assertLessEqual(t0, t1)


class TargetSummary(unittest.TestCase):
    """The table's target lines: per head dim, geomean x cuDNN >= 1.0, shapes >= 0.85x cuDNN and
    >= 1.5x flash (naming those under), and the milestone shape's TFLOP/s."""

    def lines(self, doc):
        return [l for l in perf_report.format_table(doc).splitlines()
                if "targets:" in l or l.startswith(("  under on", "milestone"))]

    def test_the_fixture_misses_every_target_and_names_the_shapes(self):
        lines = self.lines(fixture())
        self.assertIn("d64   targets: geomean x cudnn >= 1 NOT met; x cudnn >= 0.85 on 0/12; x flash >= 1.5 on 0/11",
                      lines)
        under = [l for l in lines if l.startswith("  under on x flash")]
        self.assertEqual(len(under), 2)  # d64 and d128
        self.assertIn("bf16 full N512 0.90", under[0])
        self.assertNotIn("bf16 causal N512", under[0])  # its flash is missing: not judged on flash
        self.assertIn("bf16 full N8192 B1 0.90", under[1])  # outside the grid: its batch is named
        self.assertFalse(any(l.startswith("milestone") for l in lines))  # no N 16k shape here

    def test_shapes_just_over_the_lines_pass_and_the_milestone_is_judged(self):
        doc = fixture()
        for r in doc["rows"]:
            r["tflops"]["cudnn"] = r["tflops"]["flashtune"] / 0.851
            if r["tflops"]["flash"] is not None:
                r["tflops"]["flash"] = r["tflops"]["flashtune"] / 1.501
        doc["rows"][0]["tflops"]["cudnn"] = doc["rows"][0]["tflops"]["flashtune"] / 0.84
        doc["rows"].append({"dtype": "bf16", "head_dim": 128, "causal": False, "batch": 1, "seqlen": 16384,
                            "heads": 16, "tflops": {"flashtune": 549.0, "flash": 300.0, "cudnn": 500.0,
                                                    "efficient": None}, "err": 1e-3, "ok": True})
        lines = self.lines(doc)
        self.assertIn("d64   targets: geomean x cudnn >= 1 NOT met; x cudnn >= 0.85 on 11/12; x flash >= 1.5 on 11/11",
                      lines)
        self.assertIn("  under on x cudnn: bf16 full N512 0.84", lines)
        self.assertIn("milestone: bf16 full N16384 d128 549.0 TFLOP/s (>= 550: NOT met)", lines)
        doc["rows"][-1]["tflops"]["flashtune"] = 550.0
        self.assertIn("milestone: bf16 full N16384 d128 550.0 TFLOP/s (>= 550: met)", self.lines(doc))
        for r in doc["rows"]:
            r["tflops"]["cudnn"] = r["tflops"]["flashtune"]
        self.assertIn("d128  targets: geomean x cudnn >= 1 met; x cudnn >= 0.85 on 14/14; x flash >= 1.5 on 14/14",
                      self.lines(doc))


class ClockSummary(unittest.TestCase):
    """The table's clock line: per system, the median over shapes of each shape's median SM
    clock while timed, the lowest shape, and the share of samples at a power cap."""

    def test_median_over_shapes_lowest_and_capped_share(self):
        doc = fixture()
        clocks = [(1980, 0.0, 10), (1700, 0.5, 10), (1650, 1.0, 20)]
        for r, (mhz, capped, n) in zip(doc["rows"], clocks):
            r["clocks"] = {"flashtune": {"sm_mhz_median": mhz, "sm_mhz_min": mhz, "power_w_max": 700,
                                         "capped": capped, "samples": n},
                           "cudnn": {"sm_mhz_median": mhz + 10, "sm_mhz_min": mhz, "power_w_max": 700,
                                     "capped": 0.0, "samples": n}}
        line = next(l for l in perf_report.format_table(doc).splitlines() if l.startswith("SM clock"))
        self.assertIn("flashtune 1700 (1650; 62%)", line)  # (0 * 10 + 0.5 * 10 + 1 * 20) / 40
        self.assertIn("cudnn 1710 (1660; 0%)", line)
        self.assertNotIn("flash ", line.replace("flashtune", ""))  # no samples for SDPA flash here


if __name__ == "__main__":
    unittest.main()
