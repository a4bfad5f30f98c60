#!/usr/bin/env python3
"""CPU tests of accuracy.py's verdict and argument checks (the measurement itself needs a GPU)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accuracy  # noqa: E402


class Verdict(unittest.TestCase):
    def test_within_the_ratio_of_the_worse_backend_passes(self):
        ok, why = accuracy.verdict({"flashtune": 3.9e-3, "flash": 1.0e-3, "cudnn": 2.0e-3}, 2.0)
        self.assertTrue(ok, why)

    def test_past_the_ratio_fails_and_says_the_bound(self):
        ok, why = accuracy.verdict({"flashtune": 4.1e-3, "flash": 1.0e-3, "cudnn": 2.0e-3}, 2.0)
        self.assertFalse(ok)
        self.assertIn("4.00e-03", why)

    def test_a_backend_that_did_not_run_is_left_out(self):
        self.assertFalse(accuracy.verdict({"flashtune": 3e-3, "flash": 1e-3, "cudnn": None}, 2.0)[0])

    def test_without_backends_the_fixed_tolerance_decides(self):
        self.assertTrue(accuracy.verdict({"flashtune": 1e-2, "flash": None, "cudnn": None}, 2.0)[0])
        self.assertFalse(accuracy.verdict({"flashtune": 3e-2, "flash": None, "cudnn": None}, 2.0)[0])

    def test_flashtune_missing_or_nan_fails(self):
        self.assertFalse(accuracy.verdict({"flashtune": None, "flash": 1e-3}, 2.0)[0])
        self.assertFalse(accuracy.verdict({"flashtune": float("nan"), "flash": 1e-3}, 2.0)[0])


class Arguments(unittest.TestCase):
    def refused(self, argv):
        with open(os.devnull, "w") as null:
            err, sys.stderr = sys.stderr, null
            try:
                with self.assertRaises(SystemExit) as cm:
                    accuracy.parse_args(argv)
            finally:
                sys.stderr = err
        self.assertEqual(cm.exception.code, 2)

    def test_defaults(self):
        a = accuracy.parse_args(["--lib", "x.so"])
        self.assertEqual(a.head_dims, [64, 96, 128, 160, 192, 224, 256])
        self.assertEqual(a.dtypes, ["bf16", "f16"])

    def test_bad_values_are_refused(self):
        self.refused(["--lib", "x.so", "--head-dims", "64,x"])
        self.refused(["--lib", "x.so", "--head-dims", "0"])
        self.refused(["--lib", "x.so", "--dtypes", "fp32"])
        self.refused(["--lib", "x.so", "--max-ratio", "0.5"])
        self.refused(["--lib", "x.so", "--batch", "0"])
        self.refused(["--head-dims", "64"])  # --lib is required


if __name__ == "__main__":
    unittest.main()
