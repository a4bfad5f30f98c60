#!/usr/bin/env python3
"""CPU tests of bench/compare_tunes.py (no GPU). Run by ctest (label cpu) or by hand."""
import csv
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare_tunes  # noqa: E402

COLUMNS = compare_tunes.PROBLEM_COLUMNS + ("variant", "status", "median_us", "phase")


def row(n, variant, us, phase="search", status="ok"):
    return dict(dtype="bf16", head_dim="64", causal="0", batch=str(16384 // n), seqlen_q=str(n), seqlen_k=str(n),
                heads_q="32", heads_kv="32", variant=f"fa2_fwd_bf16_d64_{variant}_full", status=status,
                median_us=str(us), phase=phase)


def write(rows):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    w = csv.DictWriter(f, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(rows)
    f.close()
    return f.name


class Winners(unittest.TestCase):
    def test_retimed_finalist_decides_over_a_faster_search_time(self):
        w = compare_tunes.winners([row(512, "a", 90.0), row(512, "b", 95.0), row(512, "b", 97.0, "retime"),
                                   row(512, "a", 99.0, "retime")])
        self.assertEqual(list(w.values()), [("fa2_fwd_bf16_d64_b_full", 97.0)])

    def test_search_minimum_when_nothing_was_retimed_and_failures_never_win(self):
        w = compare_tunes.winners([row(1024, "a", 50.0, status="wrong_result"), row(1024, "b", 60.0),
                                   row(1024, "c", 70.0)])
        self.assertEqual(list(w.values()), [("fa2_fwd_bf16_d64_b_full", 60.0)])


class Compare(unittest.TestCase):
    def test_ratios_same_winner_and_tolerance(self):
        first = [row(512, "a", 100.0, "retime"), row(1024, "a", 200.0, "retime"), row(2048, "a", 400.0, "retime")]
        second = [row(512, "a", 101.0, "retime"), row(1024, "b", 190.0, "retime"), row(4096, "a", 800.0, "retime")]
        rows, within, same = compare_tunes.compare(first, second, 0.02)
        self.assertEqual(len(rows), 2)  # only the problems both runs tuned
        self.assertEqual(within, 1)     # 1.01 is within 2%, 0.95 is not
        self.assertEqual(same, 1)
        self.assertAlmostEqual(rows[0][5], 0.95)  # sorted by problem name: N1024 first
        self.assertAlmostEqual(rows[1][5], 1.01)

    def test_exit_status(self):
        a = write([row(512, "a", 100.0, "retime")])
        b = write([row(512, "a", 101.0, "retime")])
        c = write([row(512, "a", 110.0, "retime")])
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


if __name__ == "__main__":
    unittest.main()
