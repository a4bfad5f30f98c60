#!/usr/bin/env python3
"""CPU tests of bench/compare_tunes.py (no GPU). Run by ctest (label cpu) or by hand."""
import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare_tunes  # noqa: E402

WINNER_COLUMNS = compare_tunes.PROBLEM_COLUMNS + ("bucket", "variant", "median_us", "tflops")
TRIAL_COLUMNS = compare_tunes.PROBLEM_COLUMNS + ("variant", "status", "median_us", "iqr_us", "phase")


def shape(n):
    return dict(dtype="bf16", head_dim="64", causal="0", batch=str(16384 // n), seqlen_q=str(n), seqlen_k=str(n),
                heads_q="32", heads_kv="32")


def winner(n, variant, us):
    """One row of `flashtune db export --table winners`."""
    return dict(shape(n), bucket=f"bf16/d64/full/q{n.bit_length() - 1}", variant=f"fa2_fwd_bf16_d64_{variant}_full",
                median_us=str(us), tflops="1")


def row(n, variant, us, phase="search", status="ok"):
    """One row of a trials export (what the replay measurer reads)."""
    return dict(shape(n), variant=f"fa2_fwd_bf16_d64_{variant}_full", status=status, median_us=str(us), iqr_us="1.0",
                phase=phase)


def write(rows, columns=WINNER_COLUMNS):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    w = csv.DictWriter(f, fieldnames=columns)
    w.writeheader()
    w.writerows(rows)
    f.close()
    return f.name


class Winners(unittest.TestCase):
    def test_the_exported_winner_decides_not_the_fastest_trial(self):
        w = compare_tunes.winners([winner(512, "b", 97.0), winner(1024, "a", 50.0)])
        self.assertEqual(w[tuple(shape(512).values())], ("fa2_fwd_bf16_d64_b_full", 97.0))
        self.assertEqual(len(w), 2)

    def test_several_winners_for_one_problem_are_refused(self):
        with self.assertRaisesRegex(ValueError, "several winners"):
            compare_tunes.winners([winner(512, "a", 1.0), winner(512, "b", 2.0)])

    def test_a_trials_export_is_refused_by_name(self):
        path = write([row(512, "a", 1.0)], TRIAL_COLUMNS)
        try:
            with self.assertRaisesRegex(ValueError, "--table winners"):
                compare_tunes.read(path)
        finally:
            os.unlink(path)


class Compare(unittest.TestCase):
    def test_ratios_same_winner_and_tolerance(self):
        first = [winner(512, "a", 100.0), winner(1024, "a", 200.0), winner(2048, "a", 400.0)]
        second = [winner(512, "a", 101.0), winner(1024, "b", 190.0), winner(4096, "a", 800.0)]
        rows, _ = compare_tunes.compare_keyed(first, second)
        self.assertEqual(len(rows), 2)  # only the problems both runs tuned
        self.assertEqual(compare_tunes.within(rows, 0.02, one_sided=False), 1)  # 1.01 is within 2%, 0.95 is not
        self.assertEqual(compare_tunes.same_winner(rows), 1)
        self.assertAlmostEqual(rows[0][5], 0.95)  # sorted by problem name: N1024 first
        self.assertAlmostEqual(rows[1][5], 1.01)

    def test_exit_status(self):
        a = write([winner(512, "a", 100.0)])
        b = write([winner(512, "a", 101.0)])
        c = write([winner(512, "a", 110.0)])
        bad = write([])
        with open(bad, "w") as f:
            f.write("x,y\n1,2\n")
        try:
            self.assertEqual(compare_tunes.main([a, b]), 0)
            self.assertEqual(compare_tunes.main([a, c]), 1)
            self.assertEqual(compare_tunes.main([a, c, "--tolerance", "0.15"]), 0)
            self.assertEqual(compare_tunes.main([a, bad]), 2)
            self.assertEqual(compare_tunes.main([a, "/nonexistent.csv"]), 2)
        finally:
            for p in (a, b, c, bad):
                os.unlink(p)


class Remeasure(unittest.TestCase):
    KEY = ("bf16", "64", "1", "4", "4096", "4096", "32", "32")

    def test_bench_command_names_the_shape_both_variants_and_the_mask(self):
        cmd = compare_tunes.bench_command("ft", self.KEY, ["A", "B"], 3, ["--device", "1"])
        self.assertEqual(cmd[:2], ["ft", "bench"])
        for flag, value in (("--dtype", "bf16"), ("--head-dim", "64"), ("--batch", "4"), ("--seqlen-q", "4096"),
                            ("--seqlen-k", "4096"), ("--heads-q", "32"), ("--heads-kv", "32"), ("--variant", "A,B"),
                            ("--rounds", "3"), ("--device", "1")):
            self.assertEqual(cmd[cmd.index(flag) + 1], value)
        self.assertIn("--causal", cmd)
        self.assertIn("--json", cmd)
        self.assertNotIn("--causal", compare_tunes.bench_command("ft", ("f16",) + self.KEY[1:2] + ("0",) + self.KEY[3:],
                                                                 ["A"], 1))

    def test_only_differing_winners_are_timed_again_and_their_ratio_is_the_new_one(self):
        calls = []

        def fake_run(cmd, **_):
            calls.append(cmd)
            out = "\n".join(json.dumps(dict(variant=v, status="ok", median_us=us, message=""))
                            for v, us in (("fa2_fwd_bf16_d64_a_full", 100.0), ("fa2_fwd_bf16_d64_b_full", 101.5)))
            return subprocess.CompletedProcess(cmd, 0, out, "")

        first = [winner(512, "a", 100.0), winner(1024, "a", 200.0)]
        second = [winner(512, "a", 110.0), winner(1024, "b", 150.0)]
        rows, keys = compare_tunes.compare_keyed(first, second)
        rows = compare_tunes.remeasure(rows, keys, "ft", 5, run=fake_run)
        self.assertEqual(len(calls), 1)  # N=512 chose the same variant twice: nothing to time
        self.assertIn("fa2_fwd_bf16_d64_a_full,fa2_fwd_bf16_d64_b_full", calls[0])
        by_n = {r[0].split()[4]: r for r in rows}
        self.assertAlmostEqual(by_n["Nq1024"][5], 1.015)  # not the recorded 0.75
        self.assertEqual(by_n["Nq512"][5], 1.0)           # not the recorded 1.10

    def test_a_failed_remeasurement_is_an_error_naming_the_variant(self):
        def fake_run(cmd, **_):
            out = json.dumps(dict(variant="fa2_fwd_bf16_d64_b_full", status="wrong_result", median_us=0,
                                  message="max error 3"))
            return subprocess.CompletedProcess(cmd, 0, out, "")

        rows, keys = compare_tunes.compare_keyed([winner(512, "a", 1.0)], [winner(512, "b", 1.0)])
        with self.assertRaisesRegex(ValueError, "fa2_fwd_bf16_d64_b_full: wrong_result: max error 3"):
            compare_tunes.remeasure(rows, keys, "ft", 5, run=fake_run)

    def test_one_sided_tolerance_forgives_a_faster_second_winner(self):
        rows = [("p", "a", 100.0, "b", 90.0, 0.90), ("q", "a", 100.0, "b", 102.5, 1.025)]
        self.assertEqual(compare_tunes.within(rows, 0.03, one_sided=True), 2)
        self.assertEqual(compare_tunes.within(rows, 0.03, one_sided=False), 1)

    def test_the_summary_names_the_slowest_second_winner_when_one_sided(self):
        a = write([winner(512, "a", 100.0), winner(1024, "a", 200.0)])
        b = write([winner(512, "b", 90.0), winner(1024, "b", 202.0)])
        try:
            for args, worst in (([], "worst 0.9000"), (["--one-sided"], "worst 1.0100")):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    compare_tunes.main([a, b, "--tolerance", "0.15"] + args)
                self.assertIn(worst, out.getvalue().splitlines()[-1])
        finally:
            os.unlink(a)
            os.unlink(b)

    @unittest.skipUnless(os.environ.get("FLASHTUNE_CLI"), "FLASHTUNE_CLI (the built flashtune) not set")
    def test_end_to_end_two_replayed_tunes_exported_and_remeasured(self):
        # Two runs tune N=4096 from recorded timings into their own databases: the first finds
        # A fastest, the second B. Their winners are exported by the CLI and re-measured side by
        # side through `flashtune bench --replay`: A 100 then 104, 102 (median 102), B 98 then 99
        # (median 99), so B re-measured is 0.97x A whatever the two runs recorded.
        a, b = "br128_bc32_w4_s2", "br128_bc64_w4_s3"
        cli = os.environ["FLASHTUNE_CLI"]
        tmp = tempfile.mkdtemp()
        first_trials = write([row(4096, a, 100.0), row(4096, b, 130.0)], TRIAL_COLUMNS)
        second_trials = write([row(4096, a, 120.0), row(4096, b, 90.0)], TRIAL_COLUMNS)
        side_by_side = write([row(4096, a, 100.0), row(4096, a, 104.0, "retime"), row(4096, a, 102.0, "retime"),
                              row(4096, b, 98.0), row(4096, b, 99.0, "retime")], TRIAL_COLUMNS)
        exports = []
        try:
            for name, trials in (("first", first_trials), ("second", second_trials)):
                db, csv_out = os.path.join(tmp, name + ".db"), os.path.join(tmp, name + ".csv")
                subprocess.run([cli, "tune", "--strategy", "exhaustive", "--replay", trials, "--db", db], check=True,
                               capture_output=True)
                subprocess.run([cli, "db", "export", "--format", "csv", "--table", "winners", "--db", db,
                                "--output", csv_out], check=True, capture_output=True)
                exports.append(csv_out)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = compare_tunes.main(exports + ["--remeasure", cli, "--rounds", "3",
                                                   f"--bench-arg=--replay={side_by_side}", "--tolerance", "0.05"])
            self.assertEqual(rc, 0, out.getvalue())
            self.assertIn("re-measured side by side", out.getvalue())
            self.assertIn(a[:15], out.getvalue())
            self.assertIn(" 0.971", out.getvalue())
        finally:
            for p in (first_trials, second_trials, side_by_side):
                os.unlink(p)
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
