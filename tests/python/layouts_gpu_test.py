"""flashtune.attention_varlen and flashtune.attention_with_kvcache on a GPU, against a float64
reference on random data, the outputs' memory poisoned with NaN first: ragged batches with empty
sequences, pages in shuffled order (16 and 256 keys a page), packed queries over pages (vLLM's
call), dense caches with lengths, GQA and
MQA, 1..16 queries with and without causal, both dtypes, head dims 64/128/256, lse within 1e-3,
a mixed prefill + decode batch, out= into a slice of a caller's buffer (and dense
flashtune.attention's out=), and a paged decode step
captured in a CUDA graph and replayed.

Skips (saying why) without torch or a CUDA device. Run on the GPU machine:
  PYTHONPATH=python FLASHTUNE_LIB=build/libflashtune.so python3 tests/python/layouts_gpu_test.py -v
The database is $FLASHTUNE_DB (default ./flashtune.db; untuned is fine: the built-in tiles).
"""
import math
import unittest

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
    WHY = "no CUDA device" if not HAVE_GPU else ""
except ImportError:
    torch, HAVE_GPU, WHY = None, False, "torch is not installed"

if HAVE_GPU:
    import flashtune

LENGTHS = [0, 1, 17, 1000, 4097]  # the keys of each sequence in one ragged batch


def reference(q, k, v, causal, scale=None):
    """float64 o [Nq, Hq, D] and lse [Hq, Nq] of one sequence; bottom-right causal; rows that see no
    key: o = 0, lse = -inf."""
    nq, hq, d = q.shape
    nk, hkv = k.shape[0], k.shape[1]
    qd = q.double().transpose(0, 1)
    kd = k.double().transpose(0, 1).repeat_interleave(hq // hkv, dim=0)
    vd = v.double().transpose(0, 1).repeat_interleave(hq // hkv, dim=0)
    s = torch.matmul(qd, kd.transpose(-1, -2)) * (scale or 1 / math.sqrt(d))
    if causal:
        i = torch.arange(nq, device=q.device)[:, None]
        j = torch.arange(nk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (nk - nq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return torch.matmul(p, vd).transpose(0, 1), lse


def poison():
    """Fills the allocator's free blocks with NaN, so an output the kernel never writes shows."""
    blob = torch.full((min(torch.cuda.mem_get_info()[0] // 4, 1 << 27),), float("nan"), device="cuda")
    del blob


@unittest.skipUnless(HAVE_GPU, WHY)
class LayoutsOnGpu(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def assert_matches(self, o, lse, ref_o, ref_lse, what):
        """o within 1e-2 relative L2 of the reference (and finite), lse within 1e-3 where finite and
        -inf where the row sees no key."""
        self.assertTrue(bool(o.isfinite().all()), f"{what}: o has NaN/inf (a row left unwritten?)")
        err = ((o.double() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item()
        self.assertLessEqual(err, 1e-2, f"{what}: o relative L2 error {err:.2e}")
        finite = ref_lse.isfinite()
        if bool(finite.any()):
            lse_err = (lse.double()[finite] - ref_lse[finite]).abs().max().item()
            self.assertLessEqual(lse_err, 1e-3, f"{what}: lse max abs error {lse_err:.2e}")
        self.assertTrue(bool((lse[~finite] == float("-inf")).all()), f"{what}: a row without keys has lse != -inf")
        self.assertTrue(bool((o.double()[(~finite).transpose(0, 1)] == 0).all()), f"{what}: a row without keys has o != 0")

    def test_varlen_ragged_batches(self):
        for dtype in (torch.bfloat16, torch.float16):
            for d, hq, hkv in ((64, 8, 1), (128, 16, 2), (256, 4, 4)):
                for causal in (False, True):
                    lens_q = [0, 1, 17, 1000, 333]  # Nq < Nk, Nq > Nk (masked rows when causal), empty
                    lens_k = LENGTHS
                    self.run_varlen(dtype, d, hq, hkv, causal, lens_q, lens_k, 0, 0)

    def test_varlen_batch_without_keys_or_rows(self):
        cu_q = torch.tensor([0, 3, 5], dtype=torch.int32, device="cuda")
        cu_k = torch.zeros(3, dtype=torch.int32, device="cuda")
        q = torch.randn(5, 8, 64, dtype=torch.float16, device="cuda")
        k = torch.empty(0, 8, 64, dtype=torch.float16, device="cuda")
        o, lse = flashtune.attention_varlen(q, k, k, cu_q, cu_k, 3, 1, return_lse=True)
        torch.cuda.synchronize()
        self.assertTrue(bool((o == 0).all()) and bool((lse == float("-inf")).all()))
        o = flashtune.attention_varlen(q[:0], q, q, torch.zeros(3, dtype=torch.int32, device="cuda"),
                                       torch.tensor([0, 2, 5], dtype=torch.int32, device="cuda"), 1, 3)
        self.assertEqual(o.shape, (0, 8, 64))

    def test_varlen_mixed_prefill_and_decode(self):
        # vLLM's order: decode sequences first (1-4 queries), then prefill; two launches.
        lens_q, lens_k = [1, 4, 1, 700, 130], [300, 4097, 17, 700, 1000]
        for causal in (False, True):
            self.run_varlen(torch.bfloat16, 128, 32, 8, causal, lens_q, lens_k, 3, 4)

    def run_varlen(self, dtype, d, hq, hkv, causal, lens_q, lens_k, decode_seqs, decode_max_q):
        cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), dtype=torch.int32, device="cuda")
        q = torch.randn(sum(lens_q), hq, d, dtype=dtype, device="cuda")
        k = torch.randn(sum(lens_k), hkv, d, dtype=dtype, device="cuda")
        v = torch.randn(sum(lens_k), hkv, d, dtype=dtype, device="cuda")
        poison()
        o, lse = flashtune.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=causal,
                                            return_lse=True, decode_seqs=decode_seqs, decode_max_seqlen_q=decode_max_q)
        torch.cuda.synchronize()
        self.assertEqual((o.shape, lse.shape), (q.shape, (hq, q.shape[0])))
        what = f"varlen {dtype} d{d} Hq{hq} Hkv{hkv} causal {causal} decode_seqs {decode_seqs}"
        for b in range(len(lens_q)):
            if lens_q[b] == 0:
                continue
            rows = slice(int(cu_q[b]), int(cu_q[b + 1]))
            keys = slice(int(cu_k[b]), int(cu_k[b + 1]))
            ref_o, ref_lse = reference(q[rows], k[keys], v[keys], causal)
            self.assert_matches(o[rows], lse[:, rows], ref_o, ref_lse, f"{what}, sequence {b}")

    def paged_cache(self, k, v, lens, block_size, generator):
        """k/v [B, Nk, Hkv, D] copied onto pages in shuffled order: (k_pages, v_pages, block_table)."""
        batch, nk = k.shape[0], k.shape[1]
        per_seq = (nk + block_size - 1) // block_size
        num_blocks = batch * per_seq + 7  # pages no sequence uses too
        order = torch.randperm(num_blocks, generator=generator)[:batch * per_seq].view(batch, per_seq)
        k_pages = torch.randn(num_blocks, block_size, k.shape[2], k.shape[3], dtype=k.dtype, device="cuda")
        v_pages = torch.randn_like(k_pages)
        for b in range(batch):
            for p in range(per_seq):
                n = min(block_size, nk - p * block_size)
                k_pages[order[b, p], :n] = k[b, p * block_size:p * block_size + n]
                v_pages[order[b, p], :n] = v[b, p * block_size:p * block_size + n]
        return k_pages, v_pages, order.to(device="cuda", dtype=torch.int32)

    def test_kvcache_paged_and_dense(self):
        g = torch.Generator().manual_seed(1)
        for dtype in (torch.bfloat16, torch.float16):
            for d, hq, hkv in ((128, 32, 8), (64, 8, 1), (256, 8, 8)):
                for nq, causal in ((1, False), (4, True), (16, True), (16, False)):
                    nk = max(LENGTHS)
                    q = torch.randn(len(LENGTHS), nq, hq, d, dtype=dtype, device="cuda")
                    k = torch.randn(len(LENGTHS), nk, hkv, d, dtype=dtype, device="cuda")
                    v = torch.randn_like(k)
                    lens = torch.tensor(LENGTHS, dtype=torch.int32, device="cuda")
                    refs = [reference(q[b], k[b, :n], v[b, :n], causal) for b, n in enumerate(LENGTHS)]
                    what = f"{dtype} d{d} Hq{hq} Hkv{hkv} Nq{nq} causal {causal}"
                    calls = [("dense cache", k, v, None)]
                    for block_size in (16, 256):
                        calls.append((f"paged {block_size}",) + self.paged_cache(k, v, LENGTHS, block_size, g))
                    for name, kc, vc, table in calls:
                        poison()
                        o, lse = flashtune.attention_with_kvcache(q, kc, vc, lens, table, causal=causal, return_lse=True)
                        torch.cuda.synchronize()
                        for b, (ref_o, ref_lse) in enumerate(refs):
                            self.assert_matches(o[b], lse[b], ref_o, ref_lse, f"{name} {what}, sequence {b}")

    def test_varlen_queries_over_a_paged_cache(self):
        # vLLM's call: each sequence's new tokens (1 to 16, and none) packed, its keys on shuffled
        # pages, causal aligned bottom-right per sequence; and vLLM's mixed batch (three decode
        # sequences first, then chunks of 200 and 40 tokens), with decode_seqs and without.
        g = torch.Generator().manual_seed(3)
        for dtype, block_size, lens_q, decode_seqs in ((torch.bfloat16, 16, [1, 16, 0, 5, 3], 0),
                                                       (torch.float16, 256, [1, 16, 0, 5, 3], 0),
                                                       (torch.bfloat16, 16, [1, 3, 1, 200, 40], 3),
                                                       (torch.bfloat16, 16, [1, 3, 1, 200, 40], 0)):
            lens_k = [4097, 17, 300, 1000, 5]
            batch, nk = len(lens_q), max(lens_k)
            k = torch.randn(batch, nk, 8, 128, dtype=dtype, device="cuda")
            v = torch.randn_like(k)
            kc, vc, table = self.paged_cache(k, v, lens_k, block_size, g)
            q = torch.randn(sum(lens_q), 32, 128, dtype=dtype, device="cuda")
            cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32, device="cuda")
            used = torch.tensor(lens_k, dtype=torch.int32, device="cuda")
            for causal in (False, True):
                poison()
                o, lse = flashtune.attention_varlen(q, kc, vc, cu_q, None, max(lens_q), nk, causal=causal,
                                                    block_table=table, seqused_k=used, return_lse=True,
                                                    check_tables=True, decode_seqs=decode_seqs,
                                                    decode_max_seqlen_q=3 if decode_seqs else 0)
                torch.cuda.synchronize()
                self.assertEqual((o.shape, lse.shape), (q.shape, (32, q.shape[0])))
                for b in range(batch):
                    if lens_q[b] == 0:
                        continue
                    rows = slice(int(cu_q[b]), int(cu_q[b + 1]))
                    ref_o, ref_lse = reference(q[rows], k[b, :lens_k[b]], v[b, :lens_k[b]], causal)
                    self.assert_matches(o[rows], lse[:, rows], ref_o, ref_lse,
                                        f"varlen over pages of {block_size} {dtype} causal {causal} decode_seqs "
                                        f"{decode_seqs}, sequence {b}")

    def test_kvcache_int_length_is_the_caches_first_keys(self):
        q = torch.randn(2, 1, 16, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(2, 2048, 4, 128, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        o, lse = flashtune.attention_with_kvcache(q, k, v, 1500, return_lse=True)
        torch.cuda.synchronize()
        for b in range(2):
            ref_o, ref_lse = reference(q[b], k[b, :1500], v[b, :1500], False)
            self.assert_matches(o[b], lse[b], ref_o, ref_lse, f"int length, sequence {b}")

    def test_out_writes_into_a_callers_buffer_and_nothing_else(self):
        lens = [5, 1000, 0, 77]
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")
        q = torch.randn(sum(lens), 16, 128, dtype=torch.bfloat16, device="cuda")
        kv = torch.randn(sum(lens), 4, 128, dtype=torch.bfloat16, device="cuda")
        buffer = torch.full((sum(lens) + 64, 16 * 128), 7.0, dtype=torch.bfloat16, device="cuda")
        view = buffer[32:32 + sum(lens)].view(sum(lens), 16, 128)  # an engine's output rows
        o = flashtune.attention_varlen(q, kv, kv, cu, cu, 1000, 1000, causal=True, out=view)
        expected = flashtune.attention_varlen(q, kv, kv, cu, cu, 1000, 1000, causal=True)
        torch.cuda.synchronize()
        self.assertIs(o, view)
        self.assertTrue(torch.equal(view, expected))
        self.assertTrue(bool((buffer[:32] == 7.0).all() and (buffer[32 + sum(lens):] == 7.0).all()))
        q4 = torch.randn(2, 1, 16, 128, dtype=torch.bfloat16, device="cuda")
        cache = torch.randn(2, 3000, 4, 128, dtype=torch.bfloat16, device="cuda")
        out = torch.empty_like(q4)
        seqlens = torch.tensor([3000, 20], dtype=torch.int32, device="cuda")
        flashtune.attention_with_kvcache(q4, cache, cache, seqlens, out=out)
        expected = flashtune.attention_with_kvcache(q4, cache, cache, seqlens)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(out, expected))
        # Dense flashtune.attention takes out= too (a [B, N, H, D] view of an engine's buffer).
        qd = torch.randn(2, 300, 16, 128, dtype=torch.bfloat16, device="cuda")
        kd = torch.randn(2, 300, 4, 128, dtype=torch.bfloat16, device="cuda")
        rows = torch.full((2 * 300 + 8, 16 * 128), 7.0, dtype=torch.bfloat16, device="cuda")
        view = rows[8:].view(2, 300, 16, 128)
        self.assertIs(flashtune.attention(qd, kd, kd, causal=True, out=view), view)
        expected = flashtune.attention(qd, kd, kd, causal=True)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(view, expected) and bool((rows[:8] == 7.0).all()))

    def test_paged_decode_step_replays_in_a_cuda_graph(self):
        g = torch.Generator().manual_seed(2)
        batch, nk, lens_list = 4, 8192, [8190, 3000, 1, 5000]  # room for two more keys each
        q = torch.randn(batch, 1, 32, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(batch, nk, 8, 128, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        kc, vc, table = self.paged_cache(k, v, lens_list, 16, g)
        lens = torch.tensor(lens_list, dtype=torch.int32, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # loads the kernel outside the capture
            flashtune.attention_with_kvcache(q, kc, vc, lens, table)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o_static = flashtune.attention_with_kvcache(q, kc, vc, lens, table)
        for step in range(2):  # the next token: new queries, one more key for every sequence
            q.copy_(torch.randn_like(q))
            lens_list = [n + 1 for n in lens_list]
            lens.copy_(torch.tensor(lens_list, dtype=torch.int32))
            graph.replay()
            torch.cuda.synchronize()
            eager = flashtune.attention_with_kvcache(q, kc, vc, lens, table)
            self.assertTrue(torch.equal(o_static, eager), f"step {step}: replay differs from eager")
            for b, n in enumerate(lens_list):
                page_keys = torch.cat([kc[table[b, p]] for p in range((n + 15) // 16)])[:n]
                page_vals = torch.cat([vc[table[b, p]] for p in range((n + 15) // 16)])[:n]
                ref_o, _ = reference(q[b], page_keys, page_vals, False)
                err = ((o_static[b].double() - ref_o).norm() / ref_o.norm()).item()
                self.assertLessEqual(err, 1e-2, f"step {step} sequence {b}: relative L2 {err:.2e}")

    def test_bad_device_tables_are_refused_where_python_sees_them(self):
        q = torch.randn(2, 1, 8, 64, dtype=torch.bfloat16, device="cuda")
        pages = torch.randn(16, 16, 8, 64, dtype=torch.bfloat16, device="cuda")
        lens = torch.tensor([10, 20], dtype=torch.int32, device="cuda")
        with self.assertRaisesRegex(flashtune.InvalidArgument, "block_table.dtype"):
            flashtune.attention_with_kvcache(q, pages, pages, lens, torch.zeros(2, 2, dtype=torch.int64, device="cuda"))
        with self.assertRaisesRegex(flashtune.InvalidArgument, "block_size"):  # the C ABI's check: 12 keys a page
            flashtune.attention_with_kvcache(q, pages[:, :12], pages[:, :12], lens,
                                             torch.zeros(2, 2, dtype=torch.int32, device="cuda"))
        # check_tables reads the device tables on the host: a page past the pool is named, and the
        # same call without the check runs (the kernel skips the page: a wrong answer, no fault).
        table = torch.tensor([[0, 1], [2, 16]], dtype=torch.int32, device="cuda")
        with self.assertRaisesRegex(flashtune.InvalidArgument, r"block_table\[1\]\[1\] \(16\) is not a page"):
            flashtune.attention_with_kvcache(q, pages, pages, lens, table, check_tables=True)
        flashtune.attention_with_kvcache(q, pages, pages, lens, table)
        torch.cuda.synchronize()
        # Offsets whose sizes pass the call's own checks (16 keys <= 2 sequences x 8), but not
        # non-decreasing: only check_tables sees that.
        cu_q = torch.tensor([0, 5, 3], dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0, 8, 16], dtype=torch.int32, device="cuda")
        with self.assertRaisesRegex(flashtune.InvalidArgument, "cu_seqlens_q must be non-decreasing"):
            flashtune.attention_varlen(q[0, :1].expand(5, 8, 64).contiguous(), pages[0], pages[0], cu_q, cu_k, 5, 8,
                                       check_tables=True)


if __name__ == "__main__":
    unittest.main()
