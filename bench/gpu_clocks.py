#!/usr/bin/env python3
"""The GPU's SM clock, power and clock-event reasons while a benchmark times something.

A card under back-to-back load reaches its power cap within about a second and lowers its SM
clock (an H100: 1980 -> 1605-1875 MHz at 700 W), and kernels lose unequally to that
(docs/perf-notes.md, "The card under sustained load"). A benchmark's figures therefore belong to
a regime; this module records which. Sampler runs `nvidia-smi -lms` in the background into a
file; summarize() reduces the samples that fall inside given time spans (time.time() seconds) to
the median and lowest SM clock, the highest power and the share of samples under a power cap.
No GPU library is imported: without nvidia-smi, Sampler.start() returns a sampler whose
`why_not` says so and whose samples are empty.
"""
import bisect
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import namedtuple

Sample = namedtuple("Sample", "t sm_mhz power_w reasons")

# Clock-event reason bits (nvmlClocksEventReasons): software and hardware power caps.
POWER_CAP_BITS = 0x4 | 0x80


def _number(field):
    """A float from an nvidia-smi field ('1980', '1980 MHz', '695.12 W'); None for N/A."""
    text = field.strip().split(" ")[0]
    try:
        return float(text)
    except ValueError:
        return None


def parse_samples(text):
    """Samples from `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,<reasons>
    --format=csv,noheader` lines (the timestamp in this machine's local time, as nvidia-smi
    writes it). Lines that do not parse (a header, a cut-off last line) are skipped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            stamp, frac = parts[0].rsplit(".", 1) if "." in parts[0] else (parts[0], "0")
            t = time.mktime(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + frac)
            reasons = int(parts[3], 16)
        except ValueError:
            continue
        mhz, watts = _number(parts[1]), _number(parts[2])
        if mhz is None:
            continue
        out.append(Sample(t, mhz, watts, reasons))
    return out


def summarize(samples, spans):
    """The samples inside any of `spans` ([(start, end)] in time.time() seconds), reduced: a dict
    of sm_mhz_median, sm_mhz_min, power_w_max, capped (share of samples with a power-cap reason)
    and samples (their count); None when no sample falls inside."""
    inside = [s for s in samples if any(a <= s.t <= b for a, b in spans)]
    if not inside:
        return None
    watts = [s.power_w for s in inside if s.power_w is not None]
    return {"sm_mhz_median": statistics.median(s.sm_mhz for s in inside),
            "sm_mhz_min": min(s.sm_mhz for s in inside),
            "power_w_max": max(watts) if watts else None,
            "capped": sum(1 for s in inside if s.reasons & POWER_CAP_BITS) / len(inside),
            "samples": len(inside)}


class Sampler:
    """nvidia-smi sampling every period_ms into a temporary file, from start() to stop()."""

    def __init__(self, proc=None, path=None, why_not=None):
        self._proc, self._path, self.why_not = proc, path, why_not
        self._offset, self._tail, self._samples = 0, "", []

    @classmethod
    def start(cls, period_ms=50, gpu_index=0):
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return cls(why_not="no nvidia-smi on PATH")
        path = None
        try:
            # Newer drivers name the reasons field clocks_event_reasons, older ones clocks_throttle_reasons.
            reasons = "clocks_event_reasons.active"
            if subprocess.run([exe, f"--query-gpu={reasons}", "--format=csv"], capture_output=True,
                              timeout=30).returncode != 0:
                reasons = "clocks_throttle_reasons.active"
            fd, path = tempfile.mkstemp(prefix="gpu_clocks_", suffix=".csv")
            with os.fdopen(fd, "w") as f:
                proc = subprocess.Popen([exe, "-i", str(gpu_index),
                                         f"--query-gpu=timestamp,clocks.sm,power.draw,{reasons}",
                                         "--format=csv,noheader", "-lms", str(int(period_ms))], stdout=f,
                                        stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:  # a benchmark goes on without clocks
            if path is not None:
                os.unlink(path)
            return cls(why_not=f"nvidia-smi did not start: {e}")
        return cls(proc, path)

    def samples(self):
        """Every sample so far (the file is read from where the last call stopped)."""
        if self._path is None:
            return self._samples
        with open(self._path) as f:
            f.seek(self._offset)
            chunk = f.read()
            self._offset = f.tell()
        text = self._tail + chunk
        cut = text.rfind("\n") + 1  # a last line without its newline waits for the next call
        self._samples += parse_samples(text[:cut])
        self._tail = text[cut:]
        return self._samples

    def since(self, t):
        """The samples taken at or after time.time() value t (samples() is in time order), so a
        long run's summaries do not rescan every earlier sample."""
        samples = self.samples()
        return samples[bisect.bisect_left(samples, (t,)):]

    def stop(self):
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()
            self._proc = None
        if self._path is not None:
            os.unlink(self._path)
            self._path = None
