"""The installed Python package without torch and without a GPU (tests/python/install_test.sh runs
it in a fresh virtual environment that holds the wheel and nothing else).

FLASHTUNE_TEST_SITE, when set, is the site-packages folder the package must be imported from
(so a source checkout on sys.path cannot stand in for the wheel); FLASHTUNE_TEST_VERSION the
version CMakeLists.txt declares; FLASHTUNE_TEST_FAKE_GPU the build tree's recording fake GPU
(tests/fixtures/fake_gpu.h), through which a call runs from Python to a launch without a GPU.
"""
import ctypes
import importlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

import flashtune
from flashtune import _capi, _cli


def run_python(*code_and_args, **kwargs):
    return subprocess.run([sys.executable, *code_and_args], capture_output=True, text=True, timeout=120, **kwargs)


def has_cuda_driver():
    try:
        ctypes.CDLL(os.environ.get("FLASHTUNE_LIBCUDA") or "libcuda.so.1")
        return True
    except OSError:
        return False


class Installed(unittest.TestCase):
    def test_imports_from_the_wheel_without_torch(self):
        site = os.environ.get("FLASHTUNE_TEST_SITE")
        if site:
            self.assertTrue(os.path.realpath(flashtune.__file__).startswith(os.path.realpath(site)), flashtune.__file__)
        # The library and CLI are the wheel's own, found next to the package.
        self.assertNotIn("FLASHTUNE_LIB", os.environ)
        pkg = os.path.dirname(os.path.abspath(flashtune.__file__))
        self.assertEqual(flashtune.library_path(), os.path.join(pkg, "lib", "libflashtune.so"))
        self.assertEqual(flashtune.cli_path(), os.path.join(pkg, "bin", "flashtune"))
        self.assertNotIn("torch", sys.modules)  # neither import flashtune nor the C ABI calls need it
        proc = run_python("-c", "import sys, flashtune; flashtune.plan(flashtune.Problem('bf16', 64, 1, 128, 2)); "
                                "print('torch' in sys.modules)")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), "False")

    def test_version_is_the_librarys_and_the_metadata(self):
        from importlib import metadata
        version = flashtune.version()
        self.assertRegex(version, r"^\d+\.\d+\.\d+$")
        self.assertEqual(flashtune.__version__, version)
        self.assertEqual(metadata.version("flashtune"), version)
        if os.environ.get("FLASHTUNE_TEST_VERSION"):
            self.assertEqual(version, os.environ["FLASHTUNE_TEST_VERSION"])

    def test_attention_without_torch_says_what_it_needs(self):
        try:
            importlib.import_module("torch")
            self.skipTest("torch is installed here")
        except ImportError:
            pass
        with self.assertRaisesRegex(ImportError, "flashtune.attention needs PyTorch"):
            flashtune.attention  # noqa: B018
        with self.assertRaisesRegex(ImportError, "flashtune.attention_with_kvcache needs PyTorch"):
            flashtune.attention_with_kvcache  # noqa: B018


class CAbi(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rt = flashtune.Runtime(os.path.join(self.tmp.name, "absent.db"))

    def tearDown(self):
        self.rt.close()
        self.tmp.cleanup()

    def test_forward_args_pack_like_the_c_struct(self):
        # The hot path packs ft_forward_args with struct; it must be byte for byte the ctypes mirror.
        values = dict(dtype=2, head_dim=128, causal=1, batch=3, seqlen_q=1000, seqlen_k=3000, heads_q=16, heads_kv=4)
        c = _capi.ForwardArgs()
        for name, value in values.items():
            setattr(c.problem, name, value)
        c.softmax_scale = 0.125
        c.q, c.k, c.v, c.o, c.lse = 0x1000, 0x2000, 0x3000, 0x4000, 0x5000
        strides = [(11, 12, 13), (21, 22, 23), (31, 32, 33), (41, 42, 43)]
        for field, s in zip(("q_strides", "k_strides", "v_strides", "o_strides"), strides):
            setattr(c, field, _capi.Strides3(*s))
        packed = _capi.FORWARD_ARGS.pack(*values.values(), 0.125, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000,
                                         *[x for s in strides for x in s])
        self.assertEqual(packed, ctypes.string_at(ctypes.addressof(c), ctypes.sizeof(c)))

    def test_attention_args_pack_like_the_c_struct(self):
        # The layouts' hot path packs ft_attention_args with struct; byte for byte the ctypes mirror.
        problem = (1, 64, 1, 3, 16, 4096, 32, 8)
        fields = dict(softmax_scale=0.25, q=0x1000, k=0x2000, v=0x3000, o=0x4000, lse=0x5000,
                      q_strides=(11, 12, 13), k_strides=(21, 22, 23), v_strides=(31, 32, 33), o_strides=(41, 42, 43),
                      seqlens_k=0x6000, block_table=0x7000, block_table_stride=300, max_blocks_per_seq=256,
                      num_blocks=999, block_size=16, cu_seqlens_q=0x8000, cu_seqlens_k=0x9000, total_q=48,
                      total_k=12288, workspace=0xa000, workspace_bytes=4096, decode_seqs=2, decode_max_seqlen_q=4)
        c = _capi.AttentionArgs.make("paged", _capi.Problem(*problem), **fields)
        packed = _capi.pack_attention_args("paged", problem, **fields)
        self.assertEqual(packed, ctypes.string_at(ctypes.addressof(c), ctypes.sizeof(c)))
        # The hot path's positional form gives the same bytes.
        strides = tuple(fields[f"{t}_strides"] for t in "qkvo")
        self.assertEqual(_capi.pack_attention_call("paged", problem, 0.25, (0x1000, 0x2000, 0x3000, 0x4000, 0x5000),
                                                   strides, (0x6000, 0x7000, 300, 256, 999, 16),
                                                   (0x8000, 0x9000, 48, 12288), (0xa000, 4096), (2, 4)), packed)
        self.assertEqual(_capi.pack_attention_args("varlen", problem),
                         bytes(_capi.AttentionArgs.make("varlen", _capi.Problem(*problem))))
        with self.assertRaisesRegex(TypeError, "unknown field .blocksize."):
            _capi.pack_attention_args("paged", problem, blocksize=16)

    def test_workspace_of_a_split_decode_is_asked_once_per_shape(self):
        decode = (2, 128, 0, 1, 1, 32768, 32, 8)
        size = self.rt.workspace_bytes("paged", decode)
        self.assertGreater(size, 0)  # one sequence of 32k keys: the decode kernel splits them
        self.assertEqual(self.rt.workspace_bytes("dense", (2, 128, 0, 8, 4096, 4096, 32, 8)), 0)  # prefill
        self.assertEqual(self.rt._workspace_sizes[("paged", decode)], size)
        self.rt._workspace_sizes[("paged", decode)] = 12345  # kept: the library is not asked again
        self.assertEqual(self.rt.workspace_bytes("paged", decode), 12345)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "decode call: .*head_dim"):
            self.rt.workspace_bytes("paged", (2, 100, 0, 1, 1, 4096, 32, 8), "decode call")

    def test_bad_layout_arguments_launch_nothing(self):
        # ft_forward_ex through the bytes entry: the library's checks name the field.
        problem = (2, 128, 0, 2, 1, 4096, 32, 8)
        args = _capi.pack_attention_args("paged", problem, q=256, k=512, v=768, o=1024, seqlens_k=2048,
                                         q_strides=(4096, 4096, 128), k_strides=(16 * 1024, 1024, 128),
                                         v_strides=(16 * 1024, 1024, 128), o_strides=(4096, 4096, 128),
                                         block_table=4096, block_table_stride=256, max_blocks_per_seq=256,
                                         num_blocks=512, block_size=12)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "decode step: invalid_argument: .*block_size"):
            self.rt.forward_ex_packed(args, 0, "decode step")

    def test_plan_without_a_gpu_is_the_default_tile(self):
        plan = self.rt.plan(flashtune.Problem("bf16", 128, batch=2, seqlen_q=1024, heads_q=16, causal=True))
        self.assertEqual(plan.source_name, "heuristic")
        self.assertEqual(plan.source, 2)
        self.assertTrue(plan.variant_uri.startswith(plan.family + "_bf16_d128_"), plan.variant_uri)
        self.assertTrue(plan.variant_uri.endswith("_causal"), plan.variant_uri)
        self.assertEqual(plan.bucket, "bf16/d128/causal/q10/k10/bh5")
        self.assertEqual(plan.tuned_bucket, "")
        self.assertEqual(plan.tuned_median_us, 0)
        self.assertGreater(plan.block_m, 0)
        self.assertGreater(plan.block_n, 0)
        self.assertGreater(plan.warps, 0)
        self.assertIn("default", plan.why)
        self.assertIn(plan.variant_uri, str(plan))
        self.assertEqual(plan.problem.seqlen_k, 1024)  # defaults to seqlen_q
        self.assertEqual(plan.problem.heads_kv, 16)

    def test_plan_of_a_paged_call_is_its_own_bucket(self):
        problem = flashtune.Problem("bf16", 128, batch=8, seqlen_q=1, heads_q=32, seqlen_k=32768, heads_kv=8)
        paged = self.rt.plan(problem, layout="paged")
        dense = self.rt.plan(problem)
        self.assertEqual(paged.bucket, "bf16/d128/full/q0/k15/bh8/g2/paged")
        self.assertEqual(paged.family, "decode_fwd")
        self.assertEqual(dense.bucket, "bf16/d128/full/q0/k15/bh8/g2")
        self.assertEqual(self.rt.plan(problem, layout="varlen").bucket, dense.bucket)
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"layout='blocked'; allowed: dense, paged, varlen"):
            self.rt.plan(problem, layout="blocked")
        with self.assertRaisesRegex(flashtune.InvalidArgument, "backward pass serves the dense layout"):
            self.rt.plan(problem, layout="paged", backward=True)

    def test_module_plan_uses_the_default_runtime(self):
        proc = run_python("-c", "import flashtune; p = flashtune.plan(flashtune.Problem('f16', 64, 4, 512, 8, "
                                "heads_kv=2)); print(p.source_name, p.bucket)",
                          cwd=self.tmp.name, env={**os.environ, "FLASHTUNE_DB": ""})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), ["heuristic", "f16/d64/full/q9/k9/bh5/g2"])

    def test_bad_problem_names_the_field(self):
        with self.assertRaises(flashtune.InvalidArgument) as cm:
            self.rt.plan(flashtune.Problem("bf16", 100, batch=1, seqlen_q=64, heads_q=2))
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.status_name, "invalid_argument")
        self.assertIn("head_dim", str(cm.exception))
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"problem.dtype: 'fp32' is not a dtype; allowed: f16, bf16"):
            self.rt.plan(flashtune.Problem("fp32", 64, batch=1, seqlen_q=64, heads_q=2))
        with self.assertRaisesRegex(flashtune.InvalidArgument, "heads"):
            self.rt.plan(flashtune.Problem("bf16", 64, batch=1, seqlen_q=64, heads_q=6, heads_kv=4))
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"problem.causal: 'yes'; allowed: True, False"):
            flashtune.Problem("bf16", 64, batch=1, seqlen_q=64, heads_q=2, causal="yes")
        self.assertIs(flashtune.Problem("bf16", 64, batch=1, seqlen_q=64, heads_q=2, causal=1).causal, True)

    def test_bad_forward_arguments_launch_nothing(self):
        args = _capi.FORWARD_ARGS.pack(2, 64, 0, 1, 64, 64, 2, 2, 0.0, 0, 256, 256, 256, 0,
                                       *(64 * 2 * 64, 2 * 64, 64) * 4)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "q must not be null"):
            self.rt.forward_packed(args, 0)

    @unittest.skipIf(has_cuda_driver(), "a CUDA driver is present: this test is for machines without one")
    def test_launch_without_a_gpu_is_a_clear_error(self):
        args = _capi.FORWARD_ARGS.pack(2, 64, 0, 1, 64, 64, 2, 2, 0.0, 256, 512, 768, 1024, 0,
                                       *(64 * 2 * 64, 2 * 64, 64) * 4)
        with self.assertRaises(flashtune.FlashtuneError) as cm:
            self.rt.forward_packed(args, 0)
        self.assertNotIsInstance(cm.exception, flashtune.InvalidArgument)
        self.assertIn(cm.exception.status_name, ("no_driver", "no_device"))
        self.assertIn(cm.exception.status_name, str(cm.exception))

    @unittest.skipUnless(os.environ.get("FLASHTUNE_TEST_FAKE_GPU"), "FLASHTUNE_TEST_FAKE_GPU names no fake GPU")
    def test_forward_reaches_a_launch_on_the_fake_gpu(self):
        # A child process whose driver is the fake (an H200 that runs nothing and records what it
        # is asked to run): ft_forward from Python launches the planned kernel once.
        fake = os.environ["FLASHTUNE_TEST_FAKE_GPU"]
        child = """
import ctypes, json, sys
import flashtune
from flashtune import _capi

class Launch(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char * 192), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("smem_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p), ("programmatic", ctypes.c_int),
                ("captured", ctypes.c_int), ("device", ctypes.c_int), ("param_bytes", ctypes.c_int)]

def aligned(n, keep):
    raw = ctypes.create_string_buffer(n + 256)
    keep.append(raw)
    return (ctypes.addressof(raw) + 255) // 256 * 256

keep = []
rt = flashtune.Runtime(sys.argv[1])
plan = rt.plan(flashtune.Problem("bf16", 64, batch=2, seqlen_q=256, heads_q=4))
n = 2 * 256 * 4 * 64 * 2
q, k, v, o, lse = (aligned(n, keep) for _ in range(5))
args = _capi.FORWARD_ARGS.pack(2, 64, 0, 2, 256, 256, 4, 4, 0.0, q, k, v, o, lse, *(256 * 4 * 64, 4 * 64, 64) * 4)
fake = ctypes.CDLL(sys.argv[2])
fake.ft_fake_reset()
rt.forward_packed(args, 0)
launches = []
for i in range(fake.ft_fake_launch_count()):
    l = Launch()
    fake.ft_fake_launch_at(i, ctypes.byref(l))
    launches.append({"kernel": l.kernel.decode(), "device": l.device, "block": list(l.block)})
print(json.dumps({"planned": plan.variant_uri, "launches": launches}))
"""
        proc = run_python("-c", child, os.path.join(self.tmp.name, "absent.db"), fake, cwd=self.tmp.name,
                          env={**os.environ, "FLASHTUNE_LIBCUDA": fake,
                               "FLASHTUNE_CACHE_DIR": os.path.join(self.tmp.name, "cubins")})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertTrue(out["planned"].startswith("hopper_fwd_bf16_d64_"), out)
        self.assertEqual([launch["kernel"] for launch in out["launches"]], [out["planned"]])
        self.assertEqual(out["launches"][0]["device"], 0)

    def test_closed_runtime_is_refused(self):
        rt = flashtune.Runtime(os.path.join(self.tmp.name, "absent.db"))
        rt.close()
        with self.assertRaisesRegex(flashtune.InvalidArgument, "after close"):
            rt.plan(flashtune.Problem("bf16", 64, batch=1, seqlen_q=64, heads_q=2))
        rt.close()  # twice is fine

    def test_a_bad_database_is_the_librarys_error(self):
        bad = os.path.join(self.tmp.name, "bad.db")
        with open(bad, "wb") as f:
            f.write(b"this is not a database, " * 100)
        with self.assertRaises(flashtune.FlashtuneError) as cm:
            flashtune.Runtime(bad)
        self.assertIn("bad.db", str(cm.exception))
        self.assertIn(cm.exception.status_name, str(cm.exception))
        self.assertNotEqual(cm.exception.status, 0)


class Cli(unittest.TestCase):
    def test_python_m_flashtune_is_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = run_python("-m", "flashtune", "plan", "--dtype", "bf16", "--head-dim", "64", "--seqlen-q", "256",
                              "--heads-q", "4", "--json", cwd=tmp, env={**os.environ, "FLASHTUNE_DB": ""})
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn('"source":"heuristic"', proc.stdout)
            proc = run_python("-m", "flashtune", "plan", "--dtype", "fp32", "--head-dim", "64", "--seqlen-q", "256",
                              "--heads-q", "4", cwd=tmp)
            self.assertEqual(proc.returncode, 2)
            self.assertIn("--dtype", proc.stderr)

    def test_console_script_is_installed(self):
        script = os.path.join(os.path.dirname(sys.executable), "flashtune")
        if not os.path.exists(script):
            self.skipTest(f"no console script at {script} (not a virtual environment install)")
        proc = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("tune", proc.stdout)

    def test_flashtune_cli_naming_a_folder_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:  # a folder passes os.access(X_OK)
            proc = run_python("-c", "import flashtune; flashtune.cli_path()", env={**os.environ, "FLASHTUNE_CLI": tmp})
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn(f"the flashtune CLI is not at {tmp}", proc.stderr)

    def test_tune_options_become_the_clis(self):
        argv = _cli.command_line("tune", dict(dtypes=["bf16"], head_dims=(64, 128), causal=True, seqlens_q=[512],
                                              db="x.db", strategy="budgeted", retune=False, dry_run=True,
                                              heads_kv=None))
        self.assertEqual(argv[1:], ["tune", "--dtypes", "bf16", "--head-dims", "64,128", "--causal", "1",
                                    "--seqlens-q", "512", "--db", "x.db", "--strategy", "budgeted", "--dry-run"])
        self.assertEqual(_cli.command_line("tune", dict(causal=[False, True]))[2:], ["--causal", "0,1"])
        with self.assertRaisesRegex(flashtune.InvalidArgument, "dry_run=1; allowed: True, False"):
            _cli.command_line("tune", dict(dry_run=1))

    def test_tune_runs_the_clis_tuner(self):
        with tempfile.TemporaryDirectory() as tmp:
            code = ("import flashtune; flashtune.tune(dtypes=['bf16'], head_dims=[64], causal=False, seqlens_q=[256], "
                    "hidden=256, tokens=512, db='t.db', dry_run=True)")
            proc = run_python("-c", code, cwd=tmp)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("bf16 d64 full B2 Nq256 Nk256 Hq4 Hkv4", proc.stdout)
            self.assertIn("candidate(s) to compile and measure", proc.stdout)
            proc = run_python("-c", "import flashtune; flashtune.tune(dtypes=['fp8'], dry_run=True)", cwd=tmp)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("--dtypes", proc.stderr)  # the CLI's own message, passed through
            self.assertIn("flashtune.InvalidArgument: flashtune tune bad usage (exit 2)", proc.stderr)


if __name__ == "__main__":
    unittest.main()
