"""flashtune.attention_varlen and flashtune.attention_with_kvcache without a GPU: what each call
packs into ft_attention_args (decoded back field by field), the checks made in Python, the custom
ops' fake implementations and tracing with torch.compile(fullgraph=True), and the refused backward.

Needs torch (skipped without it); ctest runs it in a virtual environment with torch from PyPI
(tests/python/torch_test.sh). The GPU half, against a float64 reference, is
tests/python/layouts_gpu_test.py.
Run: PYTHONPATH=python FLASHTUNE_LIB=build/libflashtune.so python3 tests/python/layouts_test.py
"""
import unittest

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    import flashtune
    from flashtune import _capi, layouts


def meta(*shape, dtype=None):
    return torch.empty(*shape, dtype=dtype or torch.bfloat16, device="meta")


def index(*shape):
    return torch.empty(*shape, dtype=torch.int32, device="meta")


def unpack(call, o):
    """The ft_attention_args a checked call packs into o (meta: address 0), as a dict of its fields
    (strides as tuples)."""
    values = iter(_capi.ATTENTION_ARGS.unpack(layouts._pack_call(call, o, None)))
    out = {}
    for name in _capi.ATTENTION_FIELDS:
        out[name] = tuple(next(values) for _ in range(3)) if name.endswith("_strides") else next(values)
    return out


class Addresses:
    """A fake address per tensor (meta tensors have none), to see which tensor went where."""

    def __init__(self, **named):
        self.by_id = {id(t): 0x1000 * (i + 1) for i, t in enumerate(named.values())}
        self.of = {name: 0x1000 * (i + 1) for i, name in enumerate(named)}

    def __call__(self, t):
        return self.by_id[id(t)]


@unittest.skipIf(torch is None, "torch is not installed")
class Packing(unittest.TestCase):
    def test_varlen_packs_rows_offsets_and_longest_sequences(self):
        q, k, v = meta(300, 32, 128), meta(5000, 8, 128), meta(5000, 8, 128)
        cu_q, cu_k = index(4), index(4)
        addr = Addresses(q=q, k=k, v=v, cu_q=cu_q, cu_k=cu_k)
        a = unpack(layouts._varlen_args(q, k, v, cu_q, cu_k, 200, 4097, True, 0.0, 1, 1, addr), torch.empty_like(q))
        self.assertEqual(a["layout"], _capi.LAYOUTS["varlen"])
        self.assertEqual((a["dtype"], a["head_dim"], a["causal"], a["batch"], a["seqlen_q"], a["seqlen_k"],
                          a["heads_q"], a["heads_kv"]), (_capi.DTYPES["bf16"], 128, 1, 3, 200, 4097, 32, 8))
        self.assertEqual((a["q_strides"], a["k_strides"], a["o_strides"]),
                         ((0, 32 * 128, 128), (0, 8 * 128, 128), (0, 32 * 128, 128)))
        self.assertEqual((a["total_q"], a["total_k"]), (300, 5000))
        self.assertEqual((a["q"], a["k"], a["v"], a["cu_seqlens_q"], a["cu_seqlens_k"]),
                         tuple(addr.of[n] for n in ("q", "k", "v", "cu_q", "cu_k")))
        self.assertEqual((a["decode_seqs"], a["decode_max_seqlen_q"]), (1, 1))
        self.assertEqual((a["seqlens_k"], a["block_table"], a["block_size"]), (0, 0, 0))

    def test_varlen_of_a_packed_qkv_keeps_its_strides(self):
        qkv = meta(100, 3, 16, 64)  # [total, 3, H, D]: q, k, v are views with a row pitch of 3 * H * D
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        a = unpack(layouts._varlen_args(q, k, v, index(3), index(3), 60, 60, False, 0.5, 0, 0, layouts._no_address),
                   torch.empty_like(q))
        self.assertEqual(a["q_strides"], (0, 3 * 16 * 64, 64))
        self.assertEqual(a["v_strides"], (0, 3 * 16 * 64, 64))
        self.assertEqual(a["o_strides"], (0, 16 * 64, 64))  # o is dense
        self.assertEqual(a["softmax_scale"], 0.5)

    def test_varlen_over_pages_packs_offsets_pages_and_lengths(self):
        # vLLM's call: packed new tokens (1, 4, 2 a sequence) over a paged cache.
        q = meta(7, 32, 128)
        pages = meta(1000, 16, 8, 128)
        cu_q, lens, table = index(4), index(3), index(3, 256)
        addr = Addresses(q=q, k=pages, cu_q=cu_q, lens=lens, table=table)
        call = layouts._varlen_call(q, pages, pages, cu_q, None, 4, 4096, True, 0.0, 0, 0, table, lens, addr)
        a = unpack(call, torch.empty_like(q))
        self.assertEqual(a["layout"], _capi.LAYOUTS["paged"])
        self.assertEqual((a["batch"], a["seqlen_q"], a["seqlen_k"], a["heads_q"], a["heads_kv"], a["causal"]),
                         (3, 4, 4096, 32, 8, 1))
        self.assertEqual((a["q_strides"], a["o_strides"]), ((0, 32 * 128, 128), (0, 32 * 128, 128)))
        self.assertEqual(a["k_strides"], (16 * 8 * 128, 8 * 128, 128))
        self.assertEqual((a["cu_seqlens_q"], a["total_q"], a["cu_seqlens_k"], a["total_k"]), (addr.of["cu_q"], 7, 0, 0))
        self.assertEqual((a["seqlens_k"], a["block_table"], a["block_table_stride"], a["max_blocks_per_seq"],
                          a["num_blocks"], a["block_size"]), (addr.of["lens"], addr.of["table"], 256, 256, 1000, 16))

    def test_paged_packs_the_table_pages_and_lengths(self):
        q = meta(4, 1, 32, 128)
        k_cache, v_cache = meta(1000, 16, 8, 128), meta(1000, 16, 8, 128)
        table = index(4, 300)[:, :256]  # a wider table's first columns: its row pitch stays 300
        lens = index(4)
        addr = Addresses(q=q, k=k_cache, v=v_cache, lens=lens, table=table)
        call = layouts._kvcache_args(q, k_cache, v_cache, lens, table, 0, False, 0.0, addr)
        self.assertEqual(call.layout, "paged")
        a = unpack(call, torch.empty_like(q))
        self.assertEqual(a["layout"], _capi.LAYOUTS["paged"])
        self.assertEqual((a["batch"], a["seqlen_q"], a["seqlen_k"], a["heads_q"], a["heads_kv"]), (4, 1, 256 * 16, 32, 8))
        self.assertEqual((a["block_table_stride"], a["max_blocks_per_seq"], a["num_blocks"], a["block_size"]),
                         (300, 256, 1000, 16))
        self.assertEqual(a["k_strides"], (16 * 8 * 128, 8 * 128, 128))
        self.assertEqual((a["seqlens_k"], a["block_table"]), (addr.of["lens"], addr.of["table"]))
        # The call's longest sequence, when given, is the problem's (its bucket and its splits).
        problem = layouts._kvcache_args(q, k_cache, v_cache, lens, table, 1500, True, 0.0, addr).problem
        self.assertEqual((problem[2], problem[5]), (1, 1500))

    def test_dense_cache_with_lengths(self):
        q, k_cache = meta(2, 4, 16, 64), meta(2, 8192, 2, 64)
        lens = index(2)
        addr = Addresses(q=q, k=k_cache, lens=lens)
        a = unpack(layouts._kvcache_args(q, k_cache, k_cache, lens, None, 0, True, 0.0, addr), torch.empty_like(q))
        self.assertEqual((a["layout"], a["seqlen_q"], a["seqlen_k"], a["seqlens_k"]),
                         (_capi.LAYOUTS["dense"], 4, 8192, addr.of["lens"]))
        self.assertEqual((a["block_table"], a["block_size"]), (0, 0))
        self.assertEqual(a["k_strides"], (8192 * 2 * 64, 2 * 64, 64))
        call = layouts._kvcache_args(q, k_cache, k_cache, None, None, 0, True, 0.0, addr)
        self.assertEqual(unpack(call, torch.empty_like(q))["seqlens_k"], 0)  # no lengths: every key counts

    def test_an_int_length_is_a_view_of_the_caches_first_keys(self):
        seen = []
        real = layouts._kvcache_args

        def spy(q, k_cache, v_cache, cache_seqlens, block_table, *rest):
            seen.append((tuple(k_cache.shape), k_cache.stride(), cache_seqlens, rest[0]))
            return real(q, k_cache, v_cache, cache_seqlens, block_table, *rest)

        layouts._kvcache_args = spy
        try:
            k_cache = meta(2, 8192, 2, 64)
            flashtune.attention_with_kvcache(meta(2, 1, 16, 64), k_cache, k_cache, 1000)
        finally:
            layouts._kvcache_args = real
        self.assertEqual(seen, [((2, 1000, 2, 64), k_cache.stride(), None, 0)])


@unittest.skipIf(torch is None, "torch is not installed")
class CheckTables(unittest.TestCase):
    """check_tables=True: host copies of the tables through ft_check_tables (CPU tensors stand in
    for the device's; the call's other tensors are meta, at made-up aligned addresses)."""

    def paged_call(self, table, lens):
        # The call is checked on meta tensors shaped like the tables (a view keeps its pitch).
        q, pages = meta(2, 1, 8, 64), meta(64, 16, 2, 64)
        shaped = index(table.shape[0], table.stride(0))[:, :table.shape[1]]
        call = layouts._kvcache_args(q, pages, pages, index(*lens.shape), shaped, 0, False, 0.0, lambda t: 0x10000)
        o = torch.empty(2, 1, 8, 64, dtype=torch.bfloat16)  # a real address for o
        return call, layouts._pack_call(call, o, None)

    def test_a_page_outside_the_pool_is_named(self):
        wide = torch.zeros(2, 10, dtype=torch.int32)
        table = wide[:, :8]  # a view of a wider table: the host copy keeps its row pitch of 10
        lens = torch.tensor([128, 20], dtype=torch.int32)
        call, args = self.paged_call(table, lens)
        self.assertEqual(call.paged[2], 10)
        layouts._check_tables(call, args, dict(block_table=table, seqlens_k=lens), "step")
        wide[1, 1] = 64  # sequence 1's second page (20 keys need two): past the 64-page pool
        wide[0, 9] = -1  # outside the view: never read
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"step \(check_tables\): invalid_argument: "
                                                               r"block_table\[1\]\[1\] \(64\) is not a page"):
            layouts._check_tables(call, args, dict(block_table=table, seqlens_k=lens), "step")
        wide[1, 1] = 3
        lens[0] = 129  # more keys than 8 pages of 16 hold
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"seqlens_k\[0\] \(129\) must be in \[0, seqlen_k = 128\]"):
            layouts._check_tables(call, args, dict(block_table=table, seqlens_k=lens), "step")

    def test_offsets_that_decrease_are_named(self):
        q, k = meta(300, 8, 64), meta(500, 8, 64)
        cu_q = torch.tensor([0, 100, 300], dtype=torch.int32)
        cu_k = torch.tensor([0, 300, 250], dtype=torch.int32)
        call = layouts._varlen_args(q, k, k, index(3), index(3), 200, 300, True, 0.0, 0, 0, lambda t: 0x10000)
        args = layouts._pack_call(call, torch.empty(300, 8, 64, dtype=torch.bfloat16), None)
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"cu_seqlens_k must be non-decreasing"):
            layouts._check_tables(call, args, dict(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k), "prefill")

    def test_traced_or_meta_calls_cannot_check(self):
        q, pages = meta(2, 1, 8, 64), meta(64, 16, 2, 64)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "check_tables=True: only for eager calls on CUDA"):
            flashtune.attention_with_kvcache(q, pages, pages, index(2), index(2, 8), check_tables=True)
        with self.assertRaisesRegex(flashtune.InvalidArgument, "check_tables=True: only for eager calls on CUDA"):
            flashtune.attention_varlen(meta(10, 8, 64), meta(10, 8, 64), meta(10, 8, 64), index(3), index(3), 5, 5,
                                       check_tables=True)


@unittest.skipIf(torch is None, "torch is not installed")
class Checks(unittest.TestCase):
    def assert_invalid(self, needle, fn, *args, **kwargs):
        with self.assertRaises(flashtune.InvalidArgument) as cm:
            fn(*args, **kwargs)
        self.assertIn(needle, str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)

    def test_bad_varlen_arguments_are_named(self):
        f = flashtune.attention_varlen
        q, k, cu = meta(100, 8, 64), meta(200, 2, 64), index(3)
        self.assert_invalid("q: must be 3-D [total, heads, head_dim]", f, meta(1, 100, 8, 64), k, k, cu, cu, 60, 60)
        self.assert_invalid("v: shape (100, 2, 64) differs from k's (200, 2, 64)", f, q, k, meta(100, 2, 64), cu, cu, 60, 60)
        self.assert_invalid("k: head_dim (last dim) 128 differs from q's 64", f, q, meta(200, 2, 128),
                            meta(200, 2, 128), cu, cu, 60, 60)
        self.assert_invalid("cu_seqlens_q.dtype: torch.int64; must be torch.int32", f, q, k, k,
                            torch.empty(3, dtype=torch.int64, device="meta"), cu, 60, 60)
        self.assert_invalid("cu_seqlens_k: shape (4,); must be (3,)", f, q, k, k, cu, index(4), 60, 60)
        self.assert_invalid("cu_seqlens_q: must be an int32 tensor [batch + 1] with batch >= 1", f, q, k, k, index(1),
                            index(1), 60, 60)
        self.assert_invalid("cu_seqlens_k: must be a tensor; got list", f, q, k, k, cu, [0, 30, 60], 60, 60)
        self.assert_invalid("cu_seqlens_k.device: cpu differs from q.device meta", f, q, k, k, cu,
                            torch.zeros(3, dtype=torch.int32), 60, 60)
        self.assert_invalid("max_seqlen_q: 0; must be >= 1", f, q, k, k, cu, cu, 0, 60)
        self.assert_invalid("max_seqlen_k: must be an int; got float", f, q, k, k, cu, cu, 60, 60.0)
        self.assert_invalid("decode_seqs: -1; must be >= 0", f, q, k, k, cu, cu, 60, 60, decode_seqs=-1)
        self.assert_invalid("softmax_scale: -1.0", f, q, k, k, cu, cu, 60, 60, softmax_scale=-1.0)
        cpu = torch.empty(100, 8, 64, dtype=torch.float16)
        self.assert_invalid("q.device: cpu; flashtune runs on CUDA tensors", f, cpu, cpu, cpu, cu, cu, 60, 60)
        self.assert_invalid("q.dtype: torch.float32 is not supported", f, meta(100, 8, 64, dtype=torch.float32),
                            k, k, cu, cu, 60, 60)
        self.assert_invalid("k.stride(2): 2; the last dim must be contiguous", f, q, meta(200, 64, 2).transpose(1, 2),
                            k, cu, cu, 60, 60)

    def test_bad_varlen_over_pages_arguments_are_named(self):
        f = flashtune.attention_varlen
        q, pages, cu, lens, table = meta(7, 8, 64), meta(100, 16, 2, 64), index(4), index(3), index(3, 8)
        self.assert_invalid("seqused_k: required with block_table", f, q, pages, pages, cu, None, 4, 128,
                            block_table=table)
        self.assert_invalid("cu_seqlens_k: must be None with block_table", f, q, pages, pages, cu, cu, 4, 128,
                            block_table=table, seqused_k=lens)
        self.assert_invalid("seqused_k: only with block_table", f, q, meta(9, 2, 64), meta(9, 2, 64), cu, cu, 4, 4,
                            seqused_k=lens)
        self.assert_invalid("k: must be 4-D [num_blocks, block_size, heads, head_dim]", f, q, meta(9, 2, 64),
                            meta(9, 2, 64), cu, None, 4, 4, block_table=table, seqused_k=lens)
        self.assert_invalid("max_seqlen_k: 200; block_table holds 128 keys a sequence", f, q, pages, pages, cu, None, 4,
                            200, block_table=table, seqused_k=lens)
        self.assert_invalid("decode_seqs: -1; must be >= 0", f, q, pages, pages, cu, None, 4, 128,
                            block_table=table, seqused_k=lens, decode_seqs=-1)
        self.assert_invalid("seqused_k: shape (4,); must be (3,)", f, q, pages, pages, cu, None, 4, 128,
                            block_table=table, seqused_k=index(4))

    def test_bad_cache_arguments_are_named(self):
        f = flashtune.attention_with_kvcache
        q, pages, lens, table = meta(2, 1, 16, 64), meta(64, 16, 2, 64), index(2), index(2, 8)
        self.assert_invalid("cache_seqlens: required with block_table", f, q, pages, pages, None, table)
        self.assert_invalid("cache_seqlens: 5; with block_table it must be an int32 tensor", f, q, pages, pages, 5, table)
        self.assert_invalid("block_table.dtype: torch.int64; must be torch.int32", f, q, pages, pages, lens,
                            torch.empty(2, 8, dtype=torch.int64, device="meta"))
        self.assert_invalid("block_table: shape (3, 8); must be (2, 8)", f, q, pages, pages, lens, index(3, 8))
        self.assert_invalid("block_table: must be an int32 tensor [batch, max_blocks]", f, q, pages, pages, lens, index(16))
        self.assert_invalid("block_table.stride(1): 2; must be 1", f, q, pages, pages, lens, index(2, 16)[:, ::2])
        self.assert_invalid("cache_seqlens: shape (3,); must be (2,)", f, q, pages, pages, index(3), table)
        self.assert_invalid("max_seqlen_k: 200; block_table holds 128 keys a sequence (8 pages of 16)", f, q, pages,
                            pages, lens, table, max_seqlen_k=200)
        dense = meta(2, 4096, 2, 64)
        self.assert_invalid("k_cache: batch (dim 0) 64 differs from q's 2 (a paged cache needs block_table)", f, q,
                            pages, pages, lens)
        self.assert_invalid("cache_seqlens: 5000; the cache holds 4096 keys a sequence", f, q, dense, dense, 5000)
        self.assert_invalid("cache_seqlens: 0; pass a tensor of zeros", f, q, dense, dense, 0)
        self.assert_invalid("max_seqlen_k: 8000; the cache holds 4096 keys a sequence", f, q, dense, dense, lens,
                            max_seqlen_k=8000)
        self.assert_invalid("max_seqlen_k: 1000; without cache_seqlens every sequence has the cache's 4096 keys", f, q,
                            dense, dense, max_seqlen_k=1000)
        self.assert_invalid("max_seqlen_k: 1000; cache_seqlens 2000 gives every sequence 2000 keys", f, q, dense, dense,
                            2000, max_seqlen_k=1000)
        self.assert_invalid("k_cache: must be 4-D [batch, seqlen, heads, head_dim]", f, q, meta(4096, 2, 64),
                            meta(4096, 2, 64))
        self.assert_invalid("v_cache.dtype: torch.float16 differs from q.dtype torch.bfloat16", f, q, dense,
                            meta(2, 4096, 2, 64, dtype=torch.float16))


@unittest.skipIf(torch is None, "torch is not installed")
class Ops(unittest.TestCase):
    def test_fake_outputs_have_the_layouts_shapes(self):
        q, k = meta(300, 32, 128), meta(5000, 8, 128)
        o, lse = flashtune.attention_varlen(q, k, k, index(4), index(4), 200, 4097, causal=True, return_lse=True)
        self.assertEqual((o.shape, o.dtype, lse.shape, lse.dtype), (q.shape, q.dtype, (32, 300), torch.float32))
        self.assertEqual(flashtune.attention_varlen(q, k, k, index(4), index(4), 200, 4097).shape, q.shape)
        q = meta(4, 2, 32, 128)
        pages = meta(1000, 16, 8, 128)
        o, lse = flashtune.attention_with_kvcache(q, pages, pages, index(4), index(4, 64), return_lse=True)
        self.assertEqual((o.shape, lse.shape), (q.shape, (4, 32, 2)))
        # Varlen over pages: o and lse as packed rows.
        qv = meta(7, 32, 128)
        o, lse = flashtune.attention_varlen(qv, pages, pages, index(4), None, 4, 1024, block_table=index(3, 64),
                                            seqused_k=index(3), return_lse=True)
        self.assertEqual((o.shape, lse.shape), (qv.shape, (32, 7)))
        # The ops themselves: lse has no elements unless asked for.
        o, lse = torch.ops.flashtune.attention_kvcache(q, pages, pages, index(4), index(4, 64), 0, False, 0.0, False, 0)
        self.assertEqual((o.shape, lse.numel()), (q.shape, 0))

    def test_compile_traces_both_layouts_without_graph_breaks(self):
        def step(q, k_cache, v_cache, lens, table, qp, kp, cu):
            o = flashtune.attention_with_kvcache(q, k_cache, v_cache, lens, table, causal=True)
            p = torch.empty_like(qp)
            flashtune.attention_varlen(qp, kp, kp, cu, cu, 128, 128, causal=True, out=p)
            return o.float() * 2, p.float()

        for backend in ("eager", "aot_eager"):
            fn = torch.compile(step, fullgraph=True, backend=backend)
            pages = meta(256, 16, 2, 64)
            o, p = fn(meta(3, 1, 8, 64), pages, pages, index(3), index(3, 32), meta(200, 8, 64), meta(200, 8, 64), index(4))
            self.assertEqual((o.shape, o.dtype, p.shape), ((3, 1, 8, 64), torch.float32, (200, 8, 64)))

    def test_out_is_written_and_returned(self):
        q, k = meta(300, 32, 128), meta(5000, 8, 128)
        out = meta(300, 32, 128)
        o, lse = flashtune.attention_varlen(q, k, k, index(4), index(4), 200, 4097, out=out, return_lse=True)
        self.assertIs(o, out)
        self.assertEqual(lse.shape, (32, 300))
        q4, pages = meta(4, 1, 32, 128), meta(100, 16, 8, 128)
        out4 = meta(4, 1, 32, 128)
        self.assertIs(flashtune.attention_with_kvcache(q4, pages, pages, index(4), index(4, 8), out=out4), out4)
        # A slice of a larger buffer, as engines pass theirs: rows of a [tokens, Hq * D] output.
        buffer = meta(1000, 32 * 128)
        view = buffer[100:400].view(300, 32, 128)
        self.assertIs(flashtune.attention_varlen(q, k, k, index(4), index(4), 200, 4097, out=view), view)
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"out: torch.bfloat16 \(300, 32, 64\) on meta; must be "
                                                               r"torch.bfloat16 \(300, 32, 128\)"):
            flashtune.attention_varlen(q, k, k, index(4), index(4), 200, 4097, out=meta(300, 32, 64))
        with self.assertRaisesRegex(flashtune.InvalidArgument, "out.stride.3.: 32; the last dim must be contiguous"):
            flashtune.attention_with_kvcache(q4, pages, pages, index(4), index(4, 8),
                                             out=meta(4, 1, 128, 32).transpose(2, 3))
        with self.assertRaisesRegex(flashtune.InvalidArgument, "out: must be a tensor; got int"):
            flashtune.attention_with_kvcache(q4, pages, pages, index(4), index(4, 8), out=3)
        schema = str(torch.ops.flashtune.attention_kvcache_out.default._schema)
        self.assertIn("Tensor(a10!) out) -> Tensor", schema)
        grad_q = torch.empty(4, 1, 32, 128, dtype=torch.bfloat16, device="meta", requires_grad=True)
        with self.assertRaisesRegex(NotImplementedError, "no backward pass"):
            flashtune.attention_with_kvcache(grad_q, pages, pages, index(4), index(4, 8), out=out4)

    def test_plans_name_each_launch_and_its_bucket(self):
        i = index
        plan = flashtune.plan_with_kvcache(meta(4, 1, 32, 128), meta(1000, 16, 8, 128), meta(1000, 16, 8, 128), i(4),
                                           i(4, 256))
        self.assertEqual((plan.family, plan.bucket), ("decode_fwd", "bf16/d128/full/q0/k12/bh7/g2/paged"))
        self.assertIn("_kv1_", plan.variant_uri)  # the paged kernel
        dense = meta(4, 8192, 8, 128)
        # The longest sequence, when given, picks the bucket (3000 keys: k12, not the cache's k13).
        self.assertEqual(flashtune.plan_with_kvcache(meta(4, 1, 32, 128), dense, dense, i(4), max_seqlen_k=3000).bucket,
                         "bf16/d128/full/q0/k12/bh7/g2")
        self.assertEqual(flashtune.plan_with_kvcache(meta(4, 1, 32, 128), dense, dense, 1000).bucket,
                         "bf16/d128/full/q0/k10/bh7/g2")
        # A mixed batch is two launches: its decode sequences, then the rest as prefill.
        q, k = meta(302, 8, 128), meta(2300, 2, 128)
        decode, prefill = flashtune.plan_varlen(q, k, k, i(4), i(4), 300, 1000, causal=True, decode_seqs=2,
                                                decode_max_seqlen_q=1)
        self.assertEqual((decode.family, decode.bucket), ("decode_fwd", "bf16/d128/causal/q0/k10/bh4/g2"))
        self.assertEqual(prefill.bucket, "bf16/d128/causal/q9/k10/bh3/g2")
        self.assertNotEqual(prefill.family, "decode_fwd")
        self.assertEqual(len(flashtune.plan_varlen(q, k, k, i(4), i(4), 300, 1000)), 1)
        (paged,) = flashtune.plan_varlen(meta(7, 32, 128), meta(1000, 16, 8, 128), meta(1000, 16, 8, 128), i(4), None,
                                         4, 4096, block_table=i(3, 256), seqused_k=i(3))
        self.assertEqual((paged.family, paged.bucket), ("decode_fwd", "bf16/d128/full/q2/k12/bh7/g2/paged"))
        # More than 16 new tokens a sequence over pages (chunked prefill): the prefill kernel that
        # reads pages; a dense cache with lengths and as many queries: hopper_fwd's tile compiled
        # as hopper_paged, which reads them.
        (chunk,) = flashtune.plan_varlen(meta(300, 32, 128), meta(1000, 16, 8, 128), meta(1000, 16, 8, 128), i(4),
                                         None, 200, 4096, causal=True, block_table=i(3, 256), seqused_k=i(3))
        self.assertEqual(chunk.family, "hopper_paged")
        # vLLM's mixed batch over pages: its decode sequences on the decode kernel, the rest on it.
        decode, prefill = flashtune.plan_varlen(meta(302, 32, 128), meta(1000, 16, 8, 128), meta(1000, 16, 8, 128),
                                                i(4), None, 200, 4096, causal=True, decode_seqs=2,
                                                decode_max_seqlen_q=1, block_table=i(3, 256), seqused_k=i(3))
        self.assertEqual((decode.family, decode.bucket), ("decode_fwd", "bf16/d128/causal/q0/k12/bh6/g2/paged"))
        self.assertEqual((prefill.family, prefill.bucket), ("hopper_paged", "bf16/d128/causal/q8/k12/bh5/g2/paged"))
        # Pages of 8 keys are below what hopper_paged's TMA boxes read: fa2_paged, and why.
        (small,) = flashtune.plan_varlen(meta(300, 32, 128), meta(2000, 8, 8, 128), meta(2000, 8, 8, 128), i(4),
                                         None, 200, 4096, causal=True, block_table=i(3, 512), seqused_k=i(3))
        self.assertEqual(small.family, "fa2_paged")
        self.assertIn("paged.block_size (8) is below 16", small.why)
        lengths = flashtune.plan_with_kvcache(meta(4, 64, 32, 128), dense, dense, i(4))
        self.assertEqual(lengths.family, "hopper_paged")  # the fallback forward() takes, and why
        self.assertIn("cannot run this call", lengths.why)
        self.assertIn("falls back to the same tile in hopper_paged", lengths.why)
        self.assertEqual(flashtune.plan_with_kvcache(meta(4, 64, 32, 128), dense, dense).family, "hopper_fwd")
        with self.assertRaisesRegex(flashtune.InvalidArgument, "decode_max_seqlen_q: 0; must be in .1, 16."):
            flashtune.plan_varlen(q, k, k, i(4), i(4), 300, 1000, decode_seqs=2)

    def test_ops_are_registered_with_their_schemas(self):
        varlen = str(torch.ops.flashtune.attention_varlen.default._schema)
        self.assertIn("Tensor cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k", varlen)
        self.assertIn("Tensor? block_table=None, Tensor? seqused_k=None) -> (Tensor, Tensor)", varlen)
        kvcache = str(torch.ops.flashtune.attention_kvcache.default._schema)
        self.assertIn("Tensor? cache_seqlens, Tensor? block_table", kvcache)
        self.assertIn("-> (Tensor, Tensor)", kvcache)

    def test_a_gradient_through_them_is_refused_by_name(self):
        q = torch.empty(100, 8, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        o = flashtune.attention_varlen(q, q, q, index(3), index(3), 60, 60)
        with self.assertRaisesRegex(NotImplementedError, "no backward pass"):
            o.float().sum().backward()
        q4 = torch.empty(2, 1, 8, 64, dtype=torch.bfloat16, device="meta", requires_grad=True)
        o = flashtune.attention_with_kvcache(q4, meta(2, 512, 8, 64), meta(2, 512, 8, 64))
        with self.assertRaisesRegex(NotImplementedError, "no backward pass"):
            o.float().sum().backward()

    def test_runtime_methods_take_the_same_calls(self):
        import tempfile, os
        with tempfile.TemporaryDirectory() as tmp:
            with flashtune.Runtime(os.path.join(tmp, "absent.db")) as rt:
                q, k = meta(100, 8, 64), meta(200, 2, 64)
                self.assertEqual(rt.attention_varlen(q, k, k, index(3), index(3), 60, 120).shape, q.shape)
                q4, kc = meta(2, 1, 8, 64), meta(2, 512, 2, 64)
                o, lse = rt.attention_with_kvcache(q4, kc, kc, index(2), return_lse=True)
                self.assertEqual(lse.shape, (2, 8, 1))


@unittest.skipIf(torch is None, "torch is not installed")
class BrokenCalls(unittest.TestCase):
    """Seeded random bad calls of all three functions (meta and CPU tensors of any rank and dtype,
    None, numbers, strings, lists in any argument): each is either served or refused with
    InvalidArgument naming the argument, never another exception out of flashtune's own checks."""

    ODD = [None, 0, -1, 3, 1.5, "x", True, [1, 2], (1,), float("nan")]
    DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.int32, torch.int64]

    def anything(self, rng):
        if rng.random() >= 0.6:
            return rng.choice(self.ODD)
        shape = tuple(rng.choice([0, 1, 2, 3, 8, 16, 64]) for _ in range(rng.choice(range(6))))
        t = torch.empty(shape, dtype=rng.choice(self.DTYPES), device=rng.choice(["meta", "meta", "cpu"]))
        return t.transpose(-1, -2) if t.dim() >= 2 and rng.random() < 0.2 else t

    def test_bad_calls_raise_invalid_argument_only(self):
        import random
        rng = random.Random(32)
        for i in range(1500):
            kind = i % 3
            if kind == 0:
                b = rng.choice([1, 2, 3])
                args = dict(q=meta(b, rng.choice([1, 4]), 8, 64), k_cache=meta(16, 16, 2, 64),
                            v_cache=meta(16, 16, 2, 64), cache_seqlens=index(b), block_table=index(b, 4))
                names = list(args) + ["max_seqlen_k", "softmax_scale", "out", "causal", "return_lse", "check_tables"]
                fn = flashtune.attention_with_kvcache
            elif kind == 1:
                b = rng.choice([1, 2, 3])
                args = dict(q=meta(30, 8, 64), k=meta(40, 2, 64), v=meta(40, 2, 64), cu_seqlens_q=index(b + 1),
                            cu_seqlens_k=index(b + 1), max_seqlen_q=10, max_seqlen_k=20)
                names = list(args) + ["decode_seqs", "block_table", "seqused_k", "out", "softmax_scale", "causal"]
                fn = flashtune.attention_varlen
            else:
                args = dict(q=meta(2, 16, 8, 64), k=meta(2, 16, 2, 64), v=meta(2, 16, 2, 64))
                names = list(args) + ["out", "softmax_scale", "causal", "return_lse", "deterministic"]
                fn = flashtune.attention
            positional = len(args)
            for _ in range(rng.choice([1, 2])):
                args[rng.choice(names)] = self.anything(rng)
            values = list(args.values())
            kwargs = {n: args[n] for n in list(args)[positional:]}
            try:
                fn(*values[:positional], **kwargs)
            except flashtune.InvalidArgument:
                pass
            except Exception as e:  # noqa: BLE001 (the assertion below names it)
                self.fail(f"call {i} ({fn.__name__}, {args}) raised {type(e).__name__}: {e}")


if __name__ == "__main__":
    unittest.main()
