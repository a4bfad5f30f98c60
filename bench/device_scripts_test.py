#!/usr/bin/env python3
"""CPU tests of the scripts device calls are built from (no GPU): the two-build A/B tools
(bench/bench_ab_summary.py, and bench/decode_tile_ab.sh / bench/forward_tile_ab.sh driven against
stand-in packs whose `flashtune bench` prints the real table format), bench/pack_out.sh and
bench/device_call.sh (with a stand-in nvidia-smi).
Run by ctest (label cpu) or by hand."""
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "bench_ab_summary.py")

# What `flashtune bench` prints for one run (bench/data/h100-2026-12-05-s26/call1-decode-bench.txt).
TABLE = """bf16 d128 full B1 Nq1 Nk2048 Hq32 Hkv8 on NVIDIA H100 80GB HBM3, 3 rounds
variant                                        status            median_us  spread_%  TFLOP/s  regs  spill
{rows}best: {best} 2.8 TFLOP/s
"""


def table(rows):
    """rows: (variant, status, median_us)."""
    lines = "".join(f"{v:48s} {s:18s} {us:9.1f}       0.4      2.9   152      0\n" for v, s, us in rows)
    return TABLE.format(rows=lines, best=rows[0][0])


# A stand-in pack's flashtune: `bench --variant A,B,...` prints the table with every variant at
# the pack's median ($FAKE_US), plus 1 us per batch so shapes differ; it records its arguments.
FAKE_FLASHTUNE = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, sys
    sys.path.insert(0, {here!r})
    from device_scripts_test import table
    args = sys.argv[1:]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.txt"), "a") as f:
        f.write(" ".join(args) + "\\n")
    variants = args[args.index("--variant") + 1].split(",")
    us = float({us!r}) + float(args[args.index("--batch") + 1])
    print(table([(v, "ok", us) for v in variants]))
    """)


def summarise(log, old, new):
    out = subprocess.run([sys.executable, SUMMARY, log, old, new], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


class BenchAbSummary(unittest.TestCase):
    def write(self, text):
        path = os.path.join(self.tmp.name, "bench.txt")
        with open(path, "w") as f:
            f.write(text)
        return path

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_ratio_is_new_over_old_of_the_mean_medians_per_shape_label_and_tile(self):
        v = "decode_fwd_bf16_d128_bn32_rm1_w2_s4_cs2_kv0_full"
        log = ""
        for p, (a, b) in enumerate(((10.0, 9.0), (12.0, 9.0)), start=1):
            log += f"== pass {p} old B1 x 2048 dense\n" + table([(v, "ok", a)])
            log += f"== pass {p} new B1 x 2048 dense\n" + table([(v, "ok", b)])
        lines = summarise(self.write(log), "old", "new")
        self.assertEqual(len(lines), 2, lines)
        fields = lines[1].split()
        self.assertEqual(fields[:5], ["B1", "x", "2048", "dense:bf16", "bn32_rm1_w2_s4_cs2"])
        self.assertEqual(fields[5:7], ["10.0/12.0", "9.0/9.0"])
        self.assertAlmostEqual(float(fields[7]), 9.0 / 11.0, places=3)

    def test_layouts_and_masks_stay_apart_and_failed_variants_are_left_out(self):
        dense, paged = "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv0_full", "decode_fwd_bf16_d128_bn64_rm1_w4_s3_cs2_kv1_full"
        full, causal = "hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full", "hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_causal"
        log = ""
        for build, us in (("a", 20.0), ("b", 10.0)):
            log += f"== pass 1 {build} B8 x 2048 dense\n" + table([(dense, "ok", us)])
            log += f"== pass 1 {build} B8 x 2048 paged\n" + table([(paged, "ok", 2 * us)])
            log += f"== pass 1 {build} B32 x 512 d64c0\n" + table([(full, "ok", us)])
            log += f"== pass 1 {build} B32 x 512 d64c1\n" + table([(causal, "wrong result", us)])
        lines = summarise(self.write(log), "a", "b")
        labels = sorted(line.split()[3] for line in lines[1:])
        self.assertEqual(labels, ["d64c0:bf16", "dense:bf16", "paged:bf16"])  # the causal run failed: no ratio
        for line in lines[1:]:
            self.assertAlmostEqual(float(line.split()[-1]), 0.5, places=3)

    def test_one_header_over_both_dtypes_gives_a_row_to_each(self):
        log = ""
        for build, us in (("a", 20.0), ("b", 10.0)):
            log += f"== pass 1 {build} B16 x 1024 d64c0\n" + table(
                [("hopper_fwd_bf16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full", "ok", us)])
            log += f"== pass 1 {build} B16 x 1024 d64c0\n" + table(
                [("hopper_fwd_f16_d64_bm192_bn128_wg3_s2_p2_pp1_ov1_full", "ok", 3 * us)])
        lines = summarise(self.write(log), "a", "b")
        self.assertEqual(sorted(line.split()[3] for line in lines[1:]), ["d64c0:bf16", "d64c0:f16"])
        self.assertEqual(sorted(line.split()[5] for line in lines[1:]), ["20.0", "60.0"])  # not one mean of both

    def test_a_tile_run_by_one_build_only_gets_no_ratio(self):
        v = "decode_fwd_bf16_d128_bn32_rm1_w2_s2_cs4_kv0_full"
        log = "== pass 1 old B1 x 8192 dense\n" + table([(v, "ok", 20.0)])
        self.assertEqual(len(summarise(self.write(log), "old", "new")), 1)


class TileAbScripts(unittest.TestCase):
    """The drivers run each pack in turn, every pass, with the arguments their usage promises."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.packs = []
        for name, us in (("old", 10.0), ("new", 8.0)):
            pack = os.path.join(self.tmp.name, ".devcarry-" + name)
            os.mkdir(pack)
            exe = os.path.join(pack, "flashtune")
            with open(exe, "w") as f:
                f.write(FAKE_FLASHTUNE.format(here=HERE, us=us))
            os.chmod(exe, 0o755)
            self.packs.append(pack)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, script, *args, **extra_env):
        env = dict(os.environ, PASSES="2", ROUNDS="1", **extra_env)
        log = os.path.join(self.tmp.name, "bench.txt")
        out = subprocess.run(["bash", os.path.join(HERE, script), log, *self.packs, *args], capture_output=True,
                             text=True, env=env, cwd=self.tmp.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(log) as f:
            return out.stdout.splitlines(), f.read()

    def calls(self, pack):
        with open(os.path.join(pack, "calls.txt")) as f:
            return f.read().splitlines()

    def test_forward_tile_ab_times_every_shape_on_both_packs_every_pass(self):
        shapes = ["bf16 64 0 32 512 32 hopper_fwd_bf16_d64_bm64_bn128_wg1_s2_p0_pp1_ov0_full",
                  "f16 128 1 16 1024 16 hopper_fwd_f16_d128_bm128_bn128_wg2_s2_p2_pp1_ov1_causal"]
        summary, log = self.run_script("forward_tile_ab.sh", *shapes)
        self.assertEqual(log.count("== pass"), 8)  # 2 passes x 2 packs x 2 shapes
        for pack in self.packs:
            calls = self.calls(pack)
            self.assertEqual(len(calls), 4)
            self.assertIn("--dtype f16 --head-dim 128 --causal 1 --batch 16 --seqlen-q 1024 --heads-q 16", calls[1])
            self.assertIn("--rounds 1", calls[1])
            self.assertIn("--operation fwd", calls[1])  # OPERATION's default
        self.assertEqual(sorted(line.split()[3] for line in summary[1:]), ["d128c1:f16", "d64c0:bf16"])
        by_shape = {line.split()[0]: float(line.split()[-1]) for line in summary[1:]}
        self.assertAlmostEqual(by_shape["B32"], (8 + 32) / (10 + 32), places=3)
        self.assertAlmostEqual(by_shape["B16"], (8 + 16) / (10 + 16), places=3)

    def test_forward_tile_ab_times_a_paged_shape_with_its_keys_and_heads(self):
        shape = ("bf16 128 0 4 512 4096 32 8 paged "
                 "hopper_paged_bf16_d128_bm128_bn128_wg2_s3_p0_pp1_ov1_full,"
                 "hopper_paged_bf16_d128_bm192_bn80_wg3_s3_p0_pp1_ov1_full")
        summary, log = self.run_script("forward_tile_ab.sh", shape)
        self.assertEqual(log.count("== pass"), 4)  # 2 passes x 2 packs
        calls = self.calls(self.packs[0])
        self.assertIn("--batch 4 --seqlen-q 512 --seqlen-k 4096 --heads-q 32 --heads-kv 8 --layout paged", calls[0])
        self.assertEqual(sorted(line.split()[:4] for line in summary[1:]),
                         [["B4", "x", "4096", "d128c0paged:bf16"]] * 2)  # a row per tile
        self.assertEqual(sorted(line.split()[4] for line in summary[1:]),
                         ["bm128_bn128_wg2_s3_p0_pp1_ov1", "bm192_bn80_wg3_s3_p0_pp1_ov1"])

    def test_forward_tile_ab_times_the_backward_kernels_with_operation_bwd(self):
        shape = ("bf16 96 1 4 4096 21 hopper_bwd_bf16_d96_bn128_bm64_det0_dg0_dqw1_causal,"
                 "fa2_bwd_bf16_d96_bc128_br64_w8_s2_det0_dqc32_dqv2_dqs1_lay1_causal")
        summary, log = self.run_script("forward_tile_ab.sh", shape, OPERATION="bwd")
        self.assertEqual(log.count("== pass"), 4)
        for pack in self.packs:
            for call in self.calls(pack):
                self.assertIn("--head-dim 96 --causal 1 --batch 4 --seqlen-q 4096 --heads-q 21 --operation bwd", call)
        self.assertEqual(sorted(line.split()[4] for line in summary[1:]),
                         ["bc128_br64_w8_s2_det0_dqc32_dqv2_dqs1_lay1", "bn128_bm64_det0_dg0_dqw1"])

    def test_forward_tile_ab_refuses_a_shape_of_other_length(self):
        out = subprocess.run(["bash", os.path.join(HERE, "forward_tile_ab.sh"), "log", *self.packs,
                              "bf16 128 0 4 512 4096 paged hopper_paged_bf16_d128_bm128_bn128_wg2_s3_p0_pp1_ov1_full"],
                             capture_output=True, text=True, cwd=self.tmp.name)
        self.assertEqual(out.returncode, 2)
        self.assertIn("7 or 10 fields", out.stderr)

    def test_forward_tile_ab_refuses_no_shape(self):
        out = subprocess.run(["bash", os.path.join(HERE, "forward_tile_ab.sh"), "log", *self.packs],
                             capture_output=True, text=True, cwd=self.tmp.name)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no shape", out.stderr)

    def test_decode_tile_ab_times_each_layout_with_its_kernels(self):
        summary, log = self.run_script("decode_tile_ab.sh", "bn32_rm1_w2_s4_cs2 bn64_rm1_w4_s3_cs1", "1 2048,8 8192")
        self.assertEqual(log.count("== pass"), 16)  # 2 passes x 2 packs x 2 shapes x 2 layouts
        calls = self.calls(self.packs[0])
        paged = [c for c in calls if "--layout paged" in c]
        dense = [c for c in calls if "--layout dense" in c]
        self.assertEqual((len(paged), len(dense)), (4, 4))
        self.assertTrue(all("_kv1_full" in c and "_kv0_" not in c for c in paged))
        self.assertTrue(all("_kv0_full" in c and "_kv1_" not in c for c in dense))
        self.assertIn("--batch 8 --seqlen-q 1 --seqlen-k 8192 --heads-q 32 --heads-kv 8", calls[2])
        self.assertEqual(len(summary), 1 + 2 * 2 * 2)  # shapes x layouts x tiles


class PackOut(unittest.TestCase):
    """The device returns at most 8 files from $OUT, two folders deep: pack_out.sh leaves the
    kept files and one archive of everything."""

    def test_everything_is_archived_and_only_the_kept_files_stay_beside_it(self):
        with tempfile.TemporaryDirectory() as out:
            files = {"summary.txt": "s", "a/t.txt": "t", "a/b/c/deep.log": "d"}
            files.update({f"t/{i}.log": str(i) for i in range(12)})
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
                with open(os.path.join(out, rel), "w") as f:
                    f.write(text)
            subprocess.run(["bash", os.path.join(HERE, "pack_out.sh"), out, "summary.txt", "a/t.txt", "absent.txt"],
                           check=True, capture_output=True)
            self.assertEqual(sorted(os.listdir(out)), ["logs.tgz", "summary.txt", "t.txt"])
            with tarfile.open(os.path.join(out, "logs.tgz")) as tar:
                names = {os.path.normpath(m.name) for m in tar.getmembers() if m.isfile()}
                self.assertEqual(names, set(files))
                self.assertEqual(tar.extractfile("./a/b/c/deep.log").read(), b"d")


class DeviceCall(unittest.TestCase):
    """bench/device_call.sh, sourced by a call script: on an H200 the forward grid runs in the
    script's place (within what is left of LIMIT), elsewhere the script goes on with its clock."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        self.out = os.path.join(self.tmp.name, "out")
        os.mkdir(self.bin)
        os.mkdir(self.out)
        # nvidia-smi answering for $FAKE_GPU; the grid a stub that records what it was given.
        self.write(os.path.join(self.bin, "nvidia-smi"),
                   '#!/bin/sh\ncase "$*" in *noheader*) echo "$FAKE_GPU" ;; *) echo "name"; echo "$FAKE_GPU, 580.1, 1980 MHz, 35" ;; esac\n')
        self.grid = os.path.join(self.tmp.name, "grid.sh")
        self.write(self.grid, 'echo "PACK=$PACK DIMS=$DIMS LIMIT=$LIMIT OUT=$OUT" > "$OUT/grid.txt"\nexit 7\n')
        self.script = os.path.join(self.tmp.name, "call.sh")
        self.write(self.script, f'source {os.path.join(HERE, "device_call.sh")} 300\n'
                   'h200_grid /packs/.devcarry-N 64,256\ncard_line\necho "left $(left) of $LIMIT"\n')

    def tearDown(self):
        self.tmp.cleanup()

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)

    def run_call(self, gpu, **env):
        environ = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], FAKE_GPU=gpu, OUT=self.out,
                       FT_H200_GRID=self.grid)
        environ.pop("LIMIT", None)
        environ.update(env)
        return subprocess.run(["bash", self.script], capture_output=True, text=True, env=environ)

    def test_on_an_h200_the_grid_runs_in_the_scripts_place(self):
        r = self.run_call("NVIDIA H200")
        self.assertEqual(r.returncode, 7, r.stderr)  # the grid's status
        self.assertNotIn("left", r.stdout)
        with open(os.path.join(self.out, "grid.txt")) as f:
            fields = dict(kv.split("=", 1) for kv in f.read().split())
        self.assertEqual((fields["PACK"], fields["DIMS"], fields["OUT"]), ("/packs/.devcarry-N", "64,256", self.out))
        self.assertTrue(295 <= int(fields["LIMIT"]) <= 300, fields)

    def test_with_ft_no_h200_grid_an_h200_goes_on_with_the_scripts_own_work(self):
        r = self.run_call("NVIDIA H200", FT_NO_H200_GRID="1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.out, "grid.txt")))
        self.assertIn("left", r.stdout)

    def test_elsewhere_the_script_goes_on_with_its_clock_and_the_cards_line(self):
        r = self.run_call("NVIDIA H100 80GB HBM3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.out, "grid.txt")))
        words = r.stdout.split()
        self.assertEqual((words[0], words[2], words[3]), ("left", "of", "300"))
        self.assertTrue(295 <= int(words[1]) <= 300, r.stdout)
        with open(os.path.join(self.out, "gpu.txt")) as f:
            self.assertIn("NVIDIA H100 80GB HBM3, 580.1", f.read())

    def test_limit_from_the_environment_wins_over_the_default(self):
        r = self.run_call("NVIDIA H100 80GB HBM3", LIMIT="90")
        self.assertIn(" of 90", r.stdout)

    def test_a_call_without_out_is_refused(self):
        environ = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], FAKE_GPU="NVIDIA H200")
        environ.pop("OUT", None)
        r = subprocess.run(["bash", self.script], capture_output=True, text=True, env=environ)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("OUT", r.stderr)


if __name__ == "__main__":
    unittest.main()
