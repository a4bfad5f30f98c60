#!/usr/bin/env python3
"""CPU tests of bench/gpu_clocks.py: nvidia-smi's sample lines parsed, samples reduced over the
time spans a benchmark timed in, the sampler read incrementally, and its absence reported.
Run by ctest (label cpu); by hand: python3 bench/gpu_clocks_test.py"""
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_clocks  # noqa: E402


def line(t, mhz, watts, reasons):
    """One nvidia-smi csv,noheader line for time.time() value t (local time, as nvidia-smi writes)."""
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(t)) + f".{int(round((t % 1) * 1000)):03d}"
    return f"{stamp}, {mhz} MHz, {watts} W, {reasons}\n"


T0 = time.mktime(time.strptime("2026/12/05 16:01:05", "%Y/%m/%d %H:%M:%S"))


class ParseSamples(unittest.TestCase):
    def test_units_times_and_reason_bits_are_read(self):
        text = ("timestamp, clocks.current.sm [MHz], power.draw [W], clocks_event_reasons.active\n"  # a header
                + line(T0 + 0.703, 345, 73.49, "0x0000000000000001")
                + line(T0 + 1.931, 1875, 178.78, "0x0000000000000004")
                + "2026/12/05 16:01:07.012, 1815 MHz, [N/A], 0x0000000000000000\n"
                + "2026/12/05 16:01:07.0")  # cut off
        s = gpu_clocks.parse_samples(text)
        self.assertEqual(len(s), 3)
        self.assertAlmostEqual(s[0].t, T0 + 0.703, places=3)
        self.assertEqual((s[0].sm_mhz, s[0].power_w, s[0].reasons), (345.0, 73.49, 1))
        self.assertEqual((s[1].sm_mhz, s[1].reasons), (1875.0, 4))
        self.assertIsNone(s[2].power_w)


class Summarize(unittest.TestCase):
    SAMPLES = [gpu_clocks.Sample(10.0, 1980, 150, 0), gpu_clocks.Sample(10.5, 1700, 690, 0x4),
               gpu_clocks.Sample(11.0, 1650, 700, 0x4), gpu_clocks.Sample(12.0, 1980, 90, 0),
               gpu_clocks.Sample(13.0, 1600, None, 0x80)]

    def test_only_samples_inside_the_spans_count(self):
        c = gpu_clocks.summarize(self.SAMPLES, [(10.2, 11.2), (12.9, 13.1)])
        self.assertEqual(c["samples"], 3)
        self.assertEqual(c["sm_mhz_median"], 1650)
        self.assertEqual(c["sm_mhz_min"], 1600)
        self.assertEqual(c["power_w_max"], 700)
        self.assertAlmostEqual(c["capped"], 1.0)  # software (0x4) and hardware (0x80) caps both count

    def test_a_share_of_capped_samples(self):
        c = gpu_clocks.summarize(self.SAMPLES, [(9, 12.5)])
        self.assertEqual(c["samples"], 4)
        self.assertAlmostEqual(c["capped"], 0.5)
        self.assertEqual(c["sm_mhz_median"], (1700 + 1980) / 2)

    def test_no_sample_inside_is_none(self):
        self.assertIsNone(gpu_clocks.summarize(self.SAMPLES, [(20, 30)]))
        self.assertIsNone(gpu_clocks.summarize([], [(0, 100)]))


class Sampler(unittest.TestCase):
    def test_the_file_is_read_from_where_the_last_read_stopped(self):
        fd, path = tempfile.mkstemp()
        os.close(fd)
        sampler = gpu_clocks.Sampler(path=path)
        try:
            with open(path, "a") as f:
                f.write(line(T0, 1980, 100, "0x0") + line(T0 + 0.05, 1980, 120, "0x0")[:12])  # the second cut off
            self.assertEqual(len(sampler.samples()), 1)
            with open(path, "a") as f:
                f.write(line(T0 + 0.05, 1980, 120, "0x0")[12:] + line(T0 + 0.1, 1700, 700, "0x4"))
            got = sampler.samples()
            self.assertEqual([s.sm_mhz for s in got], [1980, 1980, 1700])
            self.assertEqual([s.sm_mhz for s in sampler.since(T0 + 0.04)], [1980, 1700])
            self.assertEqual(sampler.since(T0 + 1), [])
        finally:
            sampler.stop()
        self.assertFalse(os.path.exists(path))
        self.assertEqual(len(sampler.samples()), 3)  # still there after stop()

    def test_a_stand_in_nvidia_smi_is_sampled_until_stopped(self):
        # Answers the reasons-field probe, then writes a sample every 20 ms as `-lms` asks; it
        # records its arguments.
        bindir = tempfile.mkdtemp()
        smi = os.path.join(bindir, "nvidia-smi")
        with open(smi, "w") as f:
            f.write("#!/usr/bin/env python3\n"
                    "import sys, time\n"
                    f"open({os.path.join(bindir, 'args.txt')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                    "if '-lms' not in sys.argv: sys.exit(0)\n"
                    "while True:\n"
                    "    t = time.time()\n"
                    "    print(time.strftime('%Y/%m/%d %H:%M:%S', time.localtime(t)) + '.%03d, 1755 MHz, 690.5 W, 0x0000000000000004'"
                    " % int((t % 1) * 1000), flush=True)\n"
                    "    time.sleep(0.02)\n")
        os.chmod(smi, 0o755)
        old = os.environ.get("PATH", "")
        os.environ["PATH"] = bindir + os.pathsep + old
        try:
            t0 = time.time()
            sampler = gpu_clocks.Sampler.start(20)
        finally:
            os.environ["PATH"] = old
        self.assertIsNone(sampler.why_not)
        try:
            deadline = time.time() + 10
            while len(sampler.samples()) < 3 and time.time() < deadline:
                time.sleep(0.05)
            c = gpu_clocks.summarize(sampler.samples(), [(t0 - 1, time.time() + 1)])
        finally:
            sampler.stop()
        self.assertGreaterEqual(c["samples"], 3)
        self.assertEqual((c["sm_mhz_median"], c["power_w_max"], c["capped"]), (1755, 690.5, 1.0))
        with open(os.path.join(bindir, "args.txt")) as f:
            calls = f.read().splitlines()
        self.assertEqual(calls[0], "--query-gpu=clocks_event_reasons.active --format=csv")
        self.assertEqual(calls[1], "-i 0 --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active "
                                   "--format=csv,noheader -lms 20")

    def test_without_nvidia_smi_it_says_so_and_samples_nothing(self):
        old = os.environ.get("PATH", "")
        os.environ["PATH"] = tempfile.mkdtemp()
        try:
            sampler = gpu_clocks.Sampler.start(50)
        finally:
            os.environ["PATH"] = old
        self.assertEqual(sampler.why_not, "no nvidia-smi on PATH")
        self.assertEqual(sampler.samples(), [])
        sampler.stop()


if __name__ == "__main__":
    unittest.main()
