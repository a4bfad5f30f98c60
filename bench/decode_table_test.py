#!/usr/bin/env python3
"""CPU tests of bench/decode_table.py (no GPU): the table from decode_bench.py's JSON, with and
without --rounds and baselines. Run by ctest (label cpu) or by hand."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "decode_table.py")
KV = 2 * 1 * 2048 * 8 * 128 * 2  # B1 x 2k, Hkv 8, d128, bf16: bytes of K plus V


def row(**extra):
    """One shape of decode_bench.py's JSON: dense at 10 us (1.68 TB/s), cuDNN at 12.5."""
    r = {"batch": 1, "keys": 2048, "kv_bytes": KV, "copies": 4, "dense_us": 10.0, "paged16_us": 12.0,
         "paged256_us": 11.0, "cudnn_us": 12.5, "flash_us": 20.0, "dense_err": 1e-3}
    r.update(extra)
    return r


def render(rows, read=3.0):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "decode_bench.json")
        with open(path, "w") as f:
            json.dump({"read_tbps": read, "rows": rows}, f)
        out = subprocess.run([sys.executable, TABLE, path], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class DecodeTable(unittest.TestCase):
    def test_one_pass_gives_bandwidth_share_of_read_and_ratio_to_cudnn(self):
        lines = render([row()])
        self.assertEqual(lines[0], "streaming read 3.00 TB/s")
        head, body = cells(lines[1]), cells(lines[3])
        self.assertNotIn("by round", " ".join(head))
        got = dict(zip(head, body))
        self.assertEqual(got["shape"], "B1 x 2k")
        self.assertEqual(got["dense TB/s"], f"{KV / 10e-6 / 1e12:.2f} ({KV / 10e-6 / 1e12 / 3.0 * 100:.0f}%)")
        self.assertEqual(got["dense x cuDNN"], "1.25")
        self.assertEqual(got["paged16 x cuDNN"], f"{12.5 / 12.0:.2f}")

    def test_rounds_add_the_per_round_ratios_median_and_range(self):
        lines = render([row(dense_rounds_us=[10.0, 9.0, 11.0], cudnn_rounds_us=[12.0, 12.0, 12.0],
                            dense_x_cudnn_rounds=[1.2, 1.333, 1.09])])
        head, body = cells(lines[1]), cells(lines[3])
        self.assertEqual(head[-1], "dense x cuDNN by round: median [least, most] of 3")
        self.assertEqual(body[-1], "1.200 [1.090, 1.333]")
        self.assertEqual(len(head), len(body))

    def test_a_round_series_is_not_taken_for_a_baseline(self):
        # base_<name>_us is a baseline's time; base_<name>_rounds_us its rounds, not another baseline.
        lines = render([row(base_main_us=11.0, base_main_rounds_us=[11.0, 11.0], base_main_err=1e-3,
                            dense_x_cudnn_rounds=[1.25, 1.25])])
        head, body = cells(lines[1]), cells(lines[3])
        self.assertEqual([h for h in head if h.startswith("new/")], ["new/main time"])
        self.assertEqual(dict(zip(head, body))["new/main time"], f"{10.0 / 11.0:.3f}")


if __name__ == "__main__":
    unittest.main()
