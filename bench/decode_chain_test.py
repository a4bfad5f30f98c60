#!/usr/bin/env python3
"""CPU tests of bench/decode_chain.py's statistics (chain_stats): kernels of chained calls in,
the call period, the lead between calls and each kernel's median duration out. No torch, no GPU.
Run by ctest (label cpu) or by hand."""
import contextlib
import io
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode_chain  # noqa: E402

SPLIT = "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs4_kv1_full"
COMBINE = SPLIT + "_combine"


def calls(n, period, split_us, combine_us, gap, t0=100.0):
    """n calls, each a split kernel then its combine starting `gap` after the split ends; the
    next call's split starts `period` after this one's."""
    out = []
    for i in range(n):
        s = t0 + i * period
        out.append((SPLIT, s, split_us))
        out.append((COMBINE, s + split_us + gap, combine_us))
    return out


class ChainStats(unittest.TestCase):
    def test_period_lead_and_kernel_durations(self):
        # split 6 us, combine 2 us starting 0.5 us after it: a call spans 8.5 us; the next call
        # starts 8 us after this one, so it starts 0.5 us before the previous call ends.
        st = decode_chain.chain_stats(calls(5, 8.0, 6.0, 2.0, 0.5), decode_chain.CALL_START["flashtune"])
        self.assertEqual(st["calls"], 5)
        self.assertAlmostEqual(st["period_us"], 8.0)
        self.assertAlmostEqual(st["lead_us"], -0.5)
        self.assertEqual(st["kernels"], {SPLIT: 6.0, COMBINE: 2.0})

    def test_events_in_any_order_and_kernels_before_the_first_call_ignored(self):
        evs = calls(4, 10.0, 6.0, 2.0, 0.0)
        evs.append(("some_copy_kernel", 0.0, 50.0))  # before the first split: not part of a call
        st = decode_chain.chain_stats(list(reversed(evs)), decode_chain.CALL_START["flashtune"])
        self.assertEqual(st["calls"], 4)
        self.assertAlmostEqual(st["period_us"], 10.0)
        self.assertAlmostEqual(st["lead_us"], 2.0)
        self.assertNotIn("some_copy_kernel", st["kernels"])

    def test_a_call_of_one_kernel_and_the_medians(self):
        # One split kernel a call (no combine), periods 5, 7, 6: median 6.
        evs = [(SPLIT, 0.0, 4.0), (SPLIT, 5.0, 4.5), (SPLIT, 12.0, 5.0), (SPLIT, 18.0, 4.0)]
        st = decode_chain.chain_stats(evs, decode_chain.CALL_START["flashtune"])
        self.assertEqual(st["calls"], 4)
        self.assertAlmostEqual(st["period_us"], 6.0)
        self.assertAlmostEqual(st["lead_us"], median_of([5 - 4, 12 - 9.5, 18 - 17]))
        self.assertAlmostEqual(st["kernels"][SPLIT], 4.25)

    def test_no_call_start_gives_nan_not_an_error(self):
        st = decode_chain.chain_stats([("other", 0.0, 1.0)], decode_chain.CALL_START["flashtune"])
        self.assertEqual(st["calls"], 0)
        self.assertTrue(math.isnan(st["period_us"]) and math.isnan(st["lead_us"]))

    def test_sdpa_call_starts_and_short_names(self):
        cudnn = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0"
        flash = ("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, 0>"
                 "(pytorch_flash::Flash_fwd_params)")
        self.assertTrue(decode_chain.CALL_START["cudnn"].search(cudnn))
        self.assertFalse(decode_chain.CALL_START["cudnn"].search("void cudnn::lean_reduction_kernel<0, 0, 0>(void *)"))
        self.assertTrue(decode_chain.CALL_START["flash"].search(flash))
        self.assertFalse(decode_chain.CALL_START["flash"].search("void pytorch_flash::flash_fwd_splitkv_combine_kernel<X>(P)"))
        self.assertFalse(decode_chain.CALL_START["flashtune"].search(COMBINE))
        self.assertEqual(decode_chain.short_name(flash), "pytorch_flash::flash_fwd_splitkv_kernel")
        self.assertEqual(decode_chain.short_name("void cudnn::lean_reduction_kernel<0, 0, 0>(void *)"),
                         "cudnn::lean_reduction_kernel")
        self.assertEqual(len(decode_chain.short_name(cudnn)), 60)


class Arguments(unittest.TestCase):
    def test_too_few_calls_are_refused_before_any_gpu_work(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            decode_chain.main(["libflashtune.so", "--calls", "3"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("--calls 3: allowed 4 or more", err.getvalue())


def median_of(xs):
    return decode_chain.median(xs)


if __name__ == "__main__":
    unittest.main()
