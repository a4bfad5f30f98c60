#!/usr/bin/env python3
"""CPU tests of bench/sass_loop_stats.py (no GPU, no cuobjdump). Run by ctest (label cpu) or by hand."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import sass_loop_stats  # noqa: E402


def sass(ops):
    """`cuobjdump -sass`-style lines, one instruction each, 16 bytes apart from 0x0000."""
    return "\n".join(f"        /*{16 * i:04x}*/                   {op} ;  /* 0x0000000000000000 */"
                     for i, op in enumerate(ops))


# A persistent kernel's shape: a tile loop (0x10-0x130) around the K/V loop (0x20-0x110), whose
# masking code (0x50-0x80) unmasked blocks jump over; an mbarrier retry stub after EXIT returns
# into the K/V loop with an unconditional branch.
KERNEL = sass([
    "MOV R1, c[0x0][0x28]",                                      # 0x00
    "S2R R0, SR_TID.X",                                          # 0x10 tile loop start
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R4+UR11], R5",          # 0x20 K/V loop start
    "@!P0 BRA 0x160",                                            # 0x30 to the retry stub
    "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR16], RZ, !UPT, gsb0",  # 0x40
    "@!P1 BRA 0x90",                                             # 0x50 skip the masking
    "FSEL R24, R24, -INF , P2",                                  # 0x60
    "FSEL R25, R25, -INF , P2",                                  # 0x70
    "FSEL R26, R26, -INF , P2",                                  # 0x80
    "FMNMX R2, R24, R25, !PT",                                   # 0x90
    "MUFU.EX2 R24, R24",                                         # 0xa0
    "SHFL.BFLY PT, R3, R2, 0x1, 0x1f",                           # 0xb0
    "HGMMA.64x64x16.F32.BF16 R88, R24, gdesc[UR16].tnspB, R88, gsb0",  # 0xc0
    "WARPGROUP.DEPBAR.LE gsb0, 0x0",                             # 0xd0
    "FMUL R88, R88, R6",                                         # 0xe0
    "SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R4+UR26], RZ",               # 0xf0
    "IADD3 R7, R7, 0x1, RZ",                                     # 0x100
    "@!P3 BRA 0x20",                                             # 0x110 K/V loop back edge
    "BAR.SYNC.DEFER_BLOCKING R3, 0x80",                          # 0x120
    "@P4 BRA 0x10",                                              # 0x130 tile loop back edge
    "EXIT",                                                      # 0x140
    "NOP",                                                       # 0x150
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R4+UR11], R5",          # 0x160 retry stub
    "BRA 0x20",                                                  # 0x170 back into the loop
]) + "\n"


class SassLoopStatsTest(unittest.TestCase):
    def test_picks_the_kv_loop_not_the_tile_loop_or_the_retry_stub(self):
        s = sass_loop_stats.stats(sass_loop_stats.parse(KERNEL), block_n=64)
        self.assertEqual(s["loop"], "0x20-0x110")
        self.assertEqual(s["body"], 16)
        self.assertEqual(s["HGMMA"], 2)
        self.assertEqual(s["mask_skip"], 3)  # the three FSELs between 0x50 and 0x90
        self.assertEqual(s["unmasked"], 13)
        self.assertAlmostEqual(s["per_key"], 13 / 64)
        self.assertEqual((s["MUFU"], s["SHFL"], s["FMUL"], s["FMNMX"], s["DEPBAR"]), (1, 1, 1, 1, 1))

    def test_no_loop_with_a_wgmma_is_reported_as_such(self):
        text = sass(["S2R R0, SR_TID.X", "@!P0 BRA 0x0", "EXIT"])
        self.assertIsNone(sass_loop_stats.stats(sass_loop_stats.parse(text), block_n=64))

    def test_command_line_reads_block_n_from_the_kernel_name(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "sass_loop_stats.py"),
                              "--name", "hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp0_ov0_causal"],
                             input=KERNEL, capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertEqual(len(out), 2, out)
        row = dict(zip(out[0].split("\t"), out[1].split("\t")))
        self.assertEqual(row["unmasked"], "13")
        self.assertEqual(row["per_key"], f"{13 / 128:.2f}")


if __name__ == "__main__":
    unittest.main()
