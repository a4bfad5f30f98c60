#!/usr/bin/env python3
"""CPU tests of bench/ncu_source_blocks.py on small CSVs in ncu's source-page format (a title
row naming the kernel, then the header, then one row per SASS instruction). Run by ctest."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_source_blocks as nsb  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"# Samples","Instructions Executed","Thread Instructions Executed"')


def write_csv(folder, name, rows):
    """rows: (source, executed, samples); 2 warps ran the kernel."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write('"Kernel Name","k",\n')
        f.write(HEADER + "\n")
        for i, (src, ex, st) in enumerate(rows):
            f.write(f'"0x{16 * i:x}","{src}","{st}","{st}","{st}","{ex}","{32 * ex}"\n')
    return path


DENSE = [("LDC R1, c[0x0][0x28]", 2, 1), ("IMAD R2, R3, R4, RZ", 2, 0), ("@P0 BRA 0x40", 2, 0),
         ("IMAD R5, R5, R6, RZ", 0, 0), ("LDGSTS.E [R2], [R4]", 4, 3), ("BAR.SYNC 0x0", 2, 7), ("EXIT", 2, 0)]
PAGED = [("LDC R1, c[0x0][0x28]", 2, 1), ("IMAD R2, R3, R4, RZ", 2, 0), ("IMAD R7, R7, R8, RZ", 6, 2),
         ("@!P1 LDG.E R9, [R10.64]", 2, 4), ("LDGSTS.E [R2], [R4]", 4, 3), ("BAR.SYNC 0x0", 2, 9), ("EXIT", 2, 0)]


class NcuSourceBlocks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dense = write_csv(self.tmp.name, "dense.csv", DENSE)
        self.paged = write_csv(self.tmp.name, "paged.csv", PAGED)

    def tearDown(self):
        self.tmp.cleanup()

    def test_summary_counts_warps_from_the_entry_instruction(self):
        s = nsb.summary(nsb.load(self.dense))
        self.assertEqual(s, {"warps": 2, "executed": 14, "samples": 11, "static": 7})

    def test_runs_of_executed_instructions_split_at_the_unexecuted_one(self):
        bs = nsb.blocks(nsb.load(self.dense))
        self.assertEqual([(b["first"], b["last"], b["static"]) for b in bs], [(0, 2, 3), (4, 6, 3)])
        self.assertEqual([b["per_warp"] for b in bs], [3.0, 4.0])  # (2 + 2 + 2) / 2, (4 + 2 + 2) / 2
        self.assertEqual([b["samples"] for b in bs], [1, 10])
        self.assertEqual(bs[1]["head"], "LDGSTS.E [R2], [R4]")
        self.assertEqual(nsb.blocks(nsb.load(self.dense), min_per_warp=3.5), [bs[1]])

    def test_opcodes_drop_predicates_and_are_counted_per_warp(self):
        ops = nsb.by_opcode(nsb.load(self.paged))
        self.assertEqual(ops["IMAD"], 4.0)  # (2 + 6) / 2
        self.assertEqual(ops["LDG.E"], 1.0)  # "@!P1 LDG.E ..."
        self.assertNotIn("BRA", ops)

    def test_two_csvs_list_the_opcode_differences_largest_first(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            nsb.main([self.dense, self.paged, "--top", "3"])
        lines = out.getvalue().splitlines()
        self.assertIn("14 executed (7.0 a warp), 11 stall samples", lines[0])
        self.assertIn("20 executed (10.0 a warp), 19 stall samples", lines[1])
        diff = [l.split() for l in lines if l.startswith("  ")]
        self.assertEqual(diff[0][0], "IMAD")  # 1.0 -> 4.0 a warp
        self.assertEqual(diff[0][-1], "+3.0")
        self.assertEqual(len(diff), 3)

    def test_a_csv_without_the_source_header_is_refused(self):
        path = os.path.join(self.tmp.name, "bad.csv")
        with open(path, "w") as f:
            f.write('"a","b"\n"1","2"\n')
        with self.assertRaises(SystemExit) as e:
            nsb.load(path)
        self.assertIn("no header", str(e.exception))


if __name__ == "__main__":
    unittest.main()
