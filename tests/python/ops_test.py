"""flashtune.attention's torch side without a GPU: the custom ops' fake implementations, tracing
with torch.compile(fullgraph=True) on meta tensors, the checks made in Python, autograd through
the backward op's fake implementation.

Needs torch (skipped without it); ctest runs it in a virtual environment with torch from PyPI
(tests/python/torch_test.sh), and the GPU machine's Python round runs it too. The GPU half is
bench/python_op.py.
Run: PYTHONPATH=python python3 tests/python/ops_test.py  (or with the package installed).
"""
import unittest

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:
    torch = None

if torch is not None:
    import flashtune
    from flashtune import ops


def meta(*shape, dtype=None, **kw):
    return torch.empty(*shape, dtype=dtype or torch.bfloat16, device="meta", **kw)


@unittest.skipIf(torch is None, "torch is not installed")
class Fake(unittest.TestCase):
    def test_outputs_have_the_runtimes_shapes_and_layout(self):
        with FakeTensorMode():
            q = torch.empty(2, 128, 8, 64, dtype=torch.bfloat16, device="cuda")
            k = torch.empty(2, 300, 2, 64, dtype=torch.bfloat16, device="cuda")
            o, lse = flashtune.attention(q, k, k, causal=True, return_lse=True)
            self.assertEqual((o.shape, o.dtype, o.stride()), (q.shape, q.dtype, q.stride()))
            self.assertEqual((lse.shape, lse.dtype), ((2, 8, 128), torch.float32))
            # A [B, H, N, D] tensor viewed as [B, N, H, D]: o keeps q's layout (empty_like).
            qt = torch.empty(2, 8, 128, 64, dtype=torch.float16, device="cuda").transpose(1, 2)
            kt = torch.empty(2, 8, 128, 64, dtype=torch.float16, device="cuda").transpose(1, 2)
            self.assertEqual(flashtune.attention(qt, kt, kt).stride(), qt.stride())

    def test_compile_traces_without_graph_breaks(self):
        def block(q, k, v):
            return flashtune.attention(q, k, v, causal=True).float() * 2

        for backend in ("eager", "aot_eager"):
            fn = torch.compile(block, fullgraph=True, backend=backend, dynamic=True)
            k = meta(2, 256, 2, 64)
            for n in (128, 100):
                y = fn(meta(2, n, 8, 64), k, k)
                self.assertEqual((y.shape, y.dtype), ((2, n, 8, 64), torch.float32))

    def test_compile_traces_the_backward_without_graph_breaks(self):
        def loss(q, k, v):
            return flashtune.attention(q, k, v, causal=True).float().sum()

        fn = torch.compile(loss, fullgraph=True, backend="aot_eager")
        q, k = meta(2, 128, 8, 64, requires_grad=True), meta(2, 128, 2, 64, requires_grad=True)
        fn(q, k, k).backward()
        self.assertEqual(q.grad.shape, q.shape)

    def test_out_is_written_and_returned(self):
        q, k = meta(2, 128, 8, 64), meta(2, 300, 2, 64)
        out = meta(2, 128, 8, 64)
        self.assertIs(flashtune.attention(q, k, k, causal=True, out=out), out)
        o, lse = flashtune.attention(q, k, k, return_lse=True, out=out)
        self.assertIs(o, out)
        self.assertEqual((lse.shape, lse.dtype), ((2, 8, 128), torch.float32))
        # Traced: the mutating op, its fake implementation.
        fn = torch.compile(lambda q, k, o: flashtune.attention(q, k, k, out=o).float(), fullgraph=True,
                           backend="aot_eager")
        self.assertEqual(fn(q, k, out).shape, q.shape)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "out: torch.bfloat16 .2, 128, 8, 32. on meta; must be"):
            flashtune.attention(q, k, k, out=meta(2, 128, 8, 32))
        with self.assertRaisesRegex(flashtune.InvalidArgument, "out: must be a tensor; got list"):
            flashtune.attention(q, k, k, out=[])
        with self.assertRaisesRegex(NotImplementedError, "out= is for inference"):
            flashtune.attention(meta(2, 128, 8, 64, requires_grad=True), k, k, out=out)
        self.assertIn("Tensor(a7!) out) -> Tensor", str(torch.ops.flashtune.attention_out.default._schema))

    def test_ops_are_registered_with_their_schemas(self):
        schema = str(torch.ops.flashtune.attention.default._schema)
        self.assertIn("flashtune::attention(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale, "
                      "SymInt runtime) -> Tensor", schema)
        self.assertIn("bool deterministic=False) -> (Tensor, Tensor)", str(torch.ops.flashtune.attention_lse.default._schema))
        self.assertIn("bool deterministic) -> (Tensor, Tensor, Tensor)",
                      str(torch.ops.flashtune.attention_backward.default._schema))


@unittest.skipIf(torch is None, "torch is not installed")
class Checks(unittest.TestCase):
    def assert_invalid(self, needle, *args, **kwargs):
        with self.assertRaises(flashtune.InvalidArgument) as cm:
            flashtune.attention(*args, **kwargs)
        self.assertIn(needle, str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)

    def test_bad_tensors_are_named(self):
        q = meta(1, 64, 4, 64)
        self.assert_invalid("q.dtype: torch.float32 is not supported", meta(1, 64, 4, 64, dtype=torch.float32), q, q)
        self.assert_invalid("k.dtype: torch.float16 differs", q, meta(1, 64, 4, 64, dtype=torch.float16), q)
        self.assert_invalid("v.stride(3): 4; the last dim must be contiguous", q, q, meta(1, 64, 64, 4).transpose(2, 3))
        self.assert_invalid("q: must be 4-D", meta(64, 4, 64), q, q)
        self.assert_invalid("v: shape (1, 32, 4, 64) differs from k's (1, 64, 4, 64)", q, q, meta(1, 32, 4, 64))
        self.assert_invalid("k: shape (2, 64, 4, 64) does not match q's", q, meta(2, 64, 4, 64), meta(2, 64, 4, 64))
        self.assert_invalid("softmax_scale: 0.0", q, q, q, softmax_scale=0.0)
        self.assert_invalid("softmax_scale: nan", q, q, q, softmax_scale=float("nan"))
        cpu = torch.empty(1, 64, 4, 64, dtype=torch.bfloat16)
        self.assert_invalid("q.device: cpu; flashtune runs on CUDA tensors", cpu, cpu, cpu)
        self.assert_invalid("k.device: cpu differs from q.device meta", q, cpu, cpu)

    def test_flags_and_scale_are_refused_unless_they_are_what_they_say(self):
        q = meta(1, 64, 4, 64)
        self.assert_invalid("causal: 'yes'; allowed: True, False", q, q, q, causal="yes")
        self.assert_invalid("return_lse: 2; allowed: True, False", q, q, q, return_lse=2)
        self.assert_invalid("softmax_scale: must be a number (or None for 1/sqrt(head_dim)); got str", q, q, q,
                            softmax_scale="0.1")
        self.assert_invalid("softmax_scale: must be a number", q, q, q, softmax_scale=True)
        self.assert_invalid("k: must be a tensor; got NoneType", q, None, q)
        self.assertEqual(flashtune.attention(q, q, q, causal=1).shape, q.shape)  # 0 and 1 read as flags

    def test_the_fast_path_is_only_for_plain_cuda_tensors(self):
        q = meta(1, 64, 4, 64)
        self.assertFalse(ops._eager_fast(q, q, q))  # meta goes through the op (its fake implementation)
        with FakeTensorMode():
            f = torch.empty(1, 64, 4, 64, dtype=torch.bfloat16, device="cuda")
            self.assertFalse(ops._eager_fast(f, f, f))

    def test_backward_gives_gradients_of_the_inputs_shapes(self):
        q = meta(1, 64, 4, 64, requires_grad=True)
        k = meta(1, 96, 2, 64, requires_grad=True)  # GQA: dk, dv like k, v
        o = flashtune.attention(q, k, k.detach(), causal=True)
        self.assertTrue(o.requires_grad)
        o.sum().backward()
        self.assertEqual((q.grad.shape, q.grad.dtype), (q.shape, q.dtype))
        self.assertEqual(k.grad.shape, k.shape)

    def test_a_gradient_through_lse_is_refused_by_name(self):
        q = meta(1, 64, 4, 64, requires_grad=True)
        o, lse = flashtune.attention(q, q, q, return_lse=True)
        with self.assertRaisesRegex(NotImplementedError, "through lse"):
            (o.float().sum() + lse.sum()).backward()
        self.assertIsNone(q.grad)  # nothing ran
        with self.assertRaisesRegex(NotImplementedError, "keeps no log-sum-exp"):
            torch.ops.flashtune.attention(q, q, q, False, 0.0, 0).sum().backward()


if __name__ == "__main__":
    unittest.main()
