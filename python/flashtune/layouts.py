"""flashtune.attention_varlen and flashtune.attention_with_kvcache: the packed (varlen) and the
K/V-cache (dense with lengths, paged) layouts as PyTorch custom ops, over ft_forward_ex.

attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal=False,
                 softmax_scale=None, return_lse=False, decode_seqs=0, decode_max_seqlen_q=0,
                 block_table=None, seqused_k=None, out=None, check_tables=False, runtime=None)
  flash_attn_varlen_func's layout: q [total_q, Hq, D], k/v [total_k, Hkv, D], sequence b at rows
  [cu_seqlens[b], cu_seqlens[b+1]) (int32 CUDA tensors [B + 1]); max_seqlen_* the longest
  sequences (ints). Causal aligns bottom-right per sequence; a sequence may have no rows (a batch
  without any keys gives o = 0, lse = -inf, and launches nothing). A mixed
  prefill + decode batch whose decode sequences come first names them: decode_seqs sequences
  with at most decode_max_seqlen_q (1..16) queries each run on the decode kernel. With
  block_table= and seqused_k= (vLLM's call) the keys are in a paged cache instead: k/v page pools
  [num_blocks, block_size, Hkv, D], block_table [B, max_blocks] and seqused_k [B] int32 (keys per
  sequence), cu_seqlens_k None; served by the decode kernel up to 16 queries a sequence, by the
  prefill kernel over pages (hopper_paged on Hopper, fa2_paged elsewhere) past that; decode_seqs
  splits a mixed batch over pages the same way (vLLM's batches: decode sequences first). Returns o
  (torch.empty_like(q)), and with return_lse also lse float32 [Hq, total_q].

attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *, causal=False,
                       softmax_scale=None, return_lse=False, max_seqlen_k=None, out=None,
                       check_tables=False, runtime=None)
  flash_attn_with_kvcache's call without the append (the engine writes new K/V into its cache
  first, as vLLM's reshape_and_cache does): q [B, Nq, Hq, D] (decode: Nq 1..16).
  - Dense cache: k_cache/v_cache [B, Nk, Hkv, D]; cache_seqlens an int32 CUDA tensor [B] (keys of
    each sequence), an int (every sequence has that many: the cache's first keys), or None (Nk).
  - Paged cache (vLLM's layout): block_table an int32 CUDA tensor [B, max_blocks] of page
    indexes into k_cache/v_cache [num_blocks, block_size, Hkv, D] (block_size a power of two
    up to 256); cache_seqlens required, a tensor.
  Up to 16 queries a sequence run on the decode kernel; past that (a prompt over a cached prefix)
  on the prefill kernel that reads the cache (hopper_paged on Hopper; elsewhere fa2_paged on
  pages and fa2_fwd on a dense cache).
  max_seqlen_k (optional): the longest sequence in the call, which picks the tuned bucket and
  bounds the split of the keys (default: what the cache can hold); longer lengths read as it.
  Causal aligns bottom-right per sequence (query i of n_q sees keys j <= i + len - n_q). Returns o
  (torch.empty_like(q)), and with return_lse also lse float32 [B, Hq, Nq].

Both take out= (a tensor like q, e.g. a view of an engine's output buffer: o is written there and
returned) and the dtypes, strides and GQA/MQA rules of flashtune.attention (ops.py); the index
tensors must be int32, contiguous (block_table: rows of contiguous entries) and on q's device. Errors are
InvalidArgument naming the argument, from the checks below or from the C ABI, and nothing is
launched. The workspace a call needs (when the decode kernel splits its keys) comes from torch's
caching allocator per call, sized by ft_workspace_size once per shape: the call allocates nothing
else, never synchronises and can be captured in a CUDA graph once its kernel is loaded (call it
once first). The device-side tables are trusted as the C ABI describes: a bad table gives a wrong
answer, never an access outside the tensors.

plan_varlen(...) and plan_with_kvcache(...) take the same arguments (meta tensors too) and return
what the call would launch, and why: a list of Plans (one per launch) and a Plan.

Registered ops, each with a fake implementation (torch.compile(fullgraph=True) traces them):
torch.ops.flashtune.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
max_seqlen_k, causal, softmax_scale, return_lse, decode_seqs, decode_max_seqlen_q, runtime) and
torch.ops.flashtune.attention_kvcache(q, k_cache, v_cache, cache_seqlens?, block_table?,
max_seqlen_k, causal, softmax_scale, return_lse, runtime), each -> (o, lse); their _out forms
(attention_varlen_out, attention_kvcache_out) take out last, write o there and return lse. lse has
no elements when return_lse is false; softmax_scale 0 means 1/sqrt(D); runtime 0 the default
runtime. There is no backward pass for these layouts (the library's serves dense calls): a
gradient through them raises NotImplementedError.

Thread safety: as flashtune.attention: calls from many threads are safe.
"""
from typing import NamedTuple, Optional

import torch

from . import _capi, _runtime
from .ops import (_DTYPE_CODES, _check_out, _direct, _flag, _raw_stream, _refuse_grad_with_out, _require_tensors,
                  _scale)

_invalid = _runtime.invalid
_pack_positional = _capi.pack_attention_call


_DIMS = {3: "[total, heads, head_dim]", 4: "[batch, seqlen, heads, head_dim]",
         "pages": "[num_blocks, block_size, heads, head_dim]"}


def _check_qkv(q, k, v, rank, names, kv_rank=None):
    """dtype code of q/k/v after the checks the C ABI cannot make: ranks (k/v: kv_rank, "pages"
    for a page pool; default q's), k and v alike, head_dim, dtype and device shared, CUDA, last
    dim contiguous."""
    # A good call passes in one expression (these checks are most of a decode step's host time);
    # anything else goes through _explain_qkv, which names what is wrong.
    kv_dims = rank if kv_rank is None else 4 if kv_rank == "pages" else kv_rank
    qs, ks, dtype = q.shape, k.shape, q.dtype
    code = _DTYPE_CODES.get(dtype)
    if (code is not None and (q.is_cuda or q.is_meta) and len(qs) == rank and len(ks) == kv_dims and v.shape == ks
            and ks[-1] == qs[-1] and k.dtype == dtype and v.dtype == dtype and k.device == q.device
            and v.device == q.device and q.stride(-1) == 1 and k.stride(-1) == 1 and v.stride(-1) == 1):
        return code
    return _explain_qkv(q, k, v, rank, names, kv_rank)


def _explain_qkv(q, k, v, rank, names, kv_rank):
    """_check_qkv one check at a time: InvalidArgument naming the first that fails, else the code
    (meta tensors: a fake call or a plan)."""
    qn, kn, vn = names
    kv_rank = rank if kv_rank is None else kv_rank
    for name, t, want in ((qn, q, rank), (kn, k, kv_rank), (vn, v, kv_rank)):
        dims = 4 if want == "pages" else want
        if t.dim() != dims:
            raise _invalid(f"{name}: must be {dims}-D {_DIMS[want]}; got shape {tuple(t.shape)}")
    if k.shape != v.shape:
        raise _invalid(f"{vn}: shape {tuple(v.shape)} differs from {kn}'s {tuple(k.shape)}")
    if k.shape[-1] != q.shape[-1]:
        raise _invalid(f"{kn}: head_dim (last dim) {k.shape[-1]} differs from {qn}'s {q.shape[-1]}")
    code = _DTYPE_CODES.get(q.dtype)
    if code is None:
        raise _invalid(f"{qn}.dtype: {q.dtype} is not supported; allowed: torch.float16, torch.bfloat16")
    for name, t in ((kn, k), (vn, v)):
        if t.dtype != q.dtype:
            raise _invalid(f"{name}.dtype: {t.dtype} differs from {qn}.dtype {q.dtype}")
        if t.device != q.device:
            raise _invalid(f"{name}.device: {t.device} differs from {qn}.device {q.device}")
    if not (q.is_cuda or q.is_meta):  # meta: shapes only (the fake implementation)
        raise _invalid(f"{qn}.device: {q.device}; flashtune runs on CUDA tensors")
    for name, t in ((qn, q), (kn, k), (vn, v)):
        if t.stride(-1) != 1:
            raise _invalid(f"{name}.stride({t.dim() - 1}): {t.stride(-1)}; the last dim must be contiguous (stride 1): "
                           f"pass {name}.contiguous()")
    return code


def _check_index(name, t, shape, device):
    """An int32 index tensor of `shape` on `device` whose rows are contiguous."""
    if (type(t) is torch.Tensor and t.dtype == torch.int32 and t.shape == shape and t.device == device
            and (shape[-1] <= 1 or t.stride(-1) == 1)):
        return  # the common case at once; otherwise each check below, naming what fails
    if not isinstance(t, torch.Tensor):
        raise _invalid(f"{name}: must be an int32 tensor; got {type(t).__name__}")
    if t.dtype != torch.int32:
        raise _invalid(f"{name}.dtype: {t.dtype}; must be torch.int32")
    if tuple(t.shape) != tuple(shape):
        raise _invalid(f"{name}: shape {tuple(t.shape)}; must be {tuple(shape)}")
    if t.device != device:
        raise _invalid(f"{name}.device: {t.device} differs from q.device {device}")
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise _invalid(f"{name}.stride({t.dim() - 1}): {t.stride(-1)}; must be 1 (pass {name}.contiguous())")


def _count(name, value, low):
    """An int argument (a Python int or a traced SymInt) of at least `low`."""
    if isinstance(value, bool) or not isinstance(value, (int, torch.SymInt)):
        raise _invalid(f"{name}: must be an int; got {type(value).__name__}")
    if value < low:
        raise _invalid(f"{name}: {value}; must be >= {low}")
    return value


def _address(t):
    return t.data_ptr()


def _no_address(t):
    return 0  # fake and meta tensors have no storage


_PLACEHOLDER = 256  # a plan reads which tensors a call has, not where they are (meta tensors have no storage)


def _placeholder_address(t):
    return _PLACEHOLDER


class _Call(NamedTuple):
    """One checked call but its outputs and workspace: _capi.pack_attention_call's arguments."""
    layout: str
    problem: tuple   # (dtype code, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv)
    scale: float
    qkv: tuple       # q, k, v addresses
    strides: tuple   # q, k, v strides (3-tuples; o's come from o)
    paged: tuple = (0,) * 6
    varlen: tuple = (0,) * 4
    mixed: tuple = (0, 0)
    packed: bool = False  # q and o as packed rows [total_q, Hq, D] (varlen, or paged with cu_seqlens_q)


def _batch_of(cu_q, device):
    """The batch of a call whose query offsets are cu_q (checked: int32 [batch + 1], batch >= 1)."""
    if not isinstance(cu_q, torch.Tensor) or cu_q.dim() != 1 or cu_q.shape[0] < 2:
        got = tuple(cu_q.shape) if isinstance(cu_q, torch.Tensor) else type(cu_q).__name__
        raise _invalid(f"cu_seqlens_q: must be an int32 tensor [batch + 1] with batch >= 1; got {got}")
    batch = cu_q.shape[0] - 1
    _check_index("cu_seqlens_q", cu_q, (batch + 1,), device)
    return batch


def _page_table(block_table, batch, device, pages, max_k):
    """(block_table_stride, max_blocks_per_seq, num_blocks, block_size) of a call over the page
    pool `pages` [num_blocks, block_size, Hkv, D], its table and longest sequence checked."""
    if not isinstance(block_table, torch.Tensor) or block_table.dim() != 2:
        got = tuple(block_table.shape) if isinstance(block_table, torch.Tensor) else type(block_table).__name__
        raise _invalid(f"block_table: must be an int32 tensor [batch, max_blocks]; got {got}")
    _check_index("block_table", block_table, (batch, block_table.shape[1]), device)
    num_blocks, block_size = pages.shape[0], pages.shape[1]
    max_blocks = block_table.shape[1]
    if max_k > max_blocks * block_size:
        raise _invalid(f"max_seqlen_k: {max_k}; block_table holds {max_blocks * block_size} keys a sequence "
                       f"({max_blocks} pages of {block_size})")
    table_stride = block_table.stride(0) if batch > 1 else max_blocks  # one row: any pitch will do
    return table_stride, max_blocks, num_blocks, block_size


def _varlen_args(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, decode_seqs, decode_max_q, ptr=_address):
    """The _Call of attention_varlen, checked; addresses through `ptr`."""
    code = _check_qkv(q, k, v, 3, "qkv")
    batch = _batch_of(cu_q, q.device)
    _check_index("cu_seqlens_k", cu_k, (batch + 1,), q.device)
    _count("max_seqlen_q", max_q, 1)
    _count("max_seqlen_k", max_k, 1)
    _count("decode_seqs", decode_seqs, 0)
    _count("decode_max_seqlen_q", decode_max_q, 0)
    qs, ks, vs = q.stride(), k.stride(), v.stride()
    return _Call("varlen", (code, q.shape[2], int(causal), batch, max_q, max_k, q.shape[1], k.shape[1]), scale,
                 (ptr(q), ptr(k), ptr(v)), ((0, qs[0], qs[1]), (0, ks[0], ks[1]), (0, vs[0], vs[1])),
                 varlen=(ptr(cu_q), ptr(cu_k), q.shape[0], k.shape[0]), mixed=(decode_seqs, decode_max_q), packed=True)


def _paged_varlen_args(q, k_pages, v_pages, cu_q, seqused_k, block_table, max_q, max_k, causal, scale, decode_seqs,
                       decode_max_q, ptr=_address):
    """The _Call of attention_varlen over a paged cache (block_table given: vLLM's call), checked."""
    code = _check_qkv(q, k_pages, v_pages, 3, "qkv", "pages")
    batch = _batch_of(cu_q, q.device)
    if seqused_k is None:
        raise _invalid("seqused_k: required with block_table (an int32 tensor [batch]: keys per sequence)")
    _check_index("seqused_k", seqused_k, (batch,), q.device)
    _count("max_seqlen_q", max_q, 1)
    _count("max_seqlen_k", max_k, 1)
    table = _page_table(block_table, batch, q.device, k_pages, max_k)
    _count("decode_seqs", decode_seqs, 0)
    _count("decode_max_seqlen_q", decode_max_q, 0)
    qs = q.stride()
    return _Call("paged", (code, q.shape[2], int(causal), batch, max_q, max_k, q.shape[1], k_pages.shape[2]), scale,
                 (ptr(q), ptr(k_pages), ptr(v_pages)), ((0, qs[0], qs[1]), k_pages.stride()[:3], v_pages.stride()[:3]),
                 paged=(ptr(seqused_k), ptr(block_table)) + table, varlen=(ptr(cu_q), 0, q.shape[0], 0),
                 mixed=(decode_seqs, decode_max_q), packed=True)


def _kvcache_args(q, k_cache, v_cache, cache_seqlens, block_table, max_k, causal, scale, ptr=_address):
    """The _Call of attention_with_kvcache, checked (max_k 0: what the cache holds); addresses
    through `ptr`."""
    code = _check_qkv(q, k_cache, v_cache, 4, ("q", "k_cache", "v_cache"))
    batch, nq, hq, d = q.shape
    _count("max_seqlen_k", max_k, 0)
    qkv = (ptr(q), ptr(k_cache), ptr(v_cache))
    strides = (q.stride()[:3], k_cache.stride()[:3], v_cache.stride()[:3])
    if block_table is None:
        if k_cache.shape[0] != batch:
            raise _invalid(f"k_cache: batch (dim 0) {k_cache.shape[0]} differs from q's {batch} (a paged cache "
                           "needs block_table)")
        holds = k_cache.shape[1]
        lengths = 0
        if cache_seqlens is not None:
            _check_index("cache_seqlens", cache_seqlens, (batch,), q.device)
            lengths = ptr(cache_seqlens)
        elif max_k not in (0, holds):  # no lengths: every sequence has all the cache's keys
            raise _invalid(f"max_seqlen_k: {max_k}; without cache_seqlens every sequence has the cache's {holds} "
                           "keys (k_cache.shape[1])")
        if max_k > holds:
            raise _invalid(f"max_seqlen_k: {max_k}; the cache holds {holds} keys a sequence (k_cache.shape[1])")
        problem = (code, d, int(causal), batch, nq, max_k or holds, hq, k_cache.shape[2])
        return _Call("dense", problem, scale, qkv, strides, paged=(lengths, 0, 0, 0, 0, 0))
    if cache_seqlens is None:
        raise _invalid("cache_seqlens: required with block_table (an int32 tensor [batch]: keys per sequence)")
    table = _page_table(block_table, batch, q.device, k_cache, max_k)
    _check_index("cache_seqlens", cache_seqlens, (batch,), q.device)
    holds = table[1] * table[3]  # max_blocks_per_seq pages of block_size keys
    problem = (code, d, int(causal), batch, nq, max_k or holds, hq, k_cache.shape[2])
    return _Call("paged", problem, scale, qkv, strides, paged=(ptr(cache_seqlens), ptr(block_table)) + table)


def _pack_call(call, o, lse, workspace=(0, 0)):
    """ft_attention_args bytes of `call` into o (and lse, may be None) with `workspace` (pointer,
    bytes)."""
    s = o.stride()
    o_strides = (0, s[0], s[1]) if call.packed else s[:3]
    pointers = call.qkv + (o.data_ptr(), 0 if lse is None else lse.data_ptr())
    return _pack_positional(call.layout, call.problem, call.scale, pointers, call.strides + (o_strides,), call.paged,
                            call.varlen, workspace, call.mixed)


def _host_tables(call, tables):
    """Host int32 copies of a call's device tables (a dict of the tensors by their C ABI name), as
    ft_check_tables reads them: the block table with the device table's row pitch. Synchronises."""
    host = {name: t.to("cpu", torch.int32).contiguous() for name, t in tables.items() if t is not None}
    table = host.get("block_table")
    if table is not None and call.paged[2] != table.shape[1]:  # a view of a wider table: keep its pitch
        pitched = torch.zeros(table.shape[0], call.paged[2], dtype=torch.int32)
        pitched[:, :table.shape[1]] = table
        host["block_table"] = pitched
    return host


def _check_tables(call, args, tables, what):
    """ft_check_tables on a call's args bytes and host copies of its `tables`: InvalidArgument
    naming the first bad entry."""
    host = _host_tables(call, tables)
    addresses = [host[n].data_ptr() if n in host else None
                 for n in ("block_table", "seqlens_k", "cu_seqlens_q", "cu_seqlens_k")]
    _capi.check(_capi.function("ft_check_tables")(args, *addresses), f"{what} (check_tables)")


def _launch(runtime, call, o, lse, what, tables=None):
    """ft_forward_ex of one call into o (and lse), with its workspace, on the current stream of o's
    device; with `tables` (check_tables=True), host copies of them checked first by ft_check_tables."""
    rt = runtime if isinstance(runtime, _runtime.Runtime) else _runtime.runtime_by_id(runtime)
    ws = rt.workspace_bytes(call.layout, call.problem, what)
    workspace = None
    if ws > 0:  # torch's caching allocator, stream-ordered: freed after the launch, reused in order
        workspace = torch.empty(ws, dtype=torch.uint8, device=o.device)
    args = _pack_call(call, o, lse, (0, 0) if workspace is None else (workspace.data_ptr(), ws))
    if tables is not None:
        _check_tables(call, args, tables, what)
    index = o.device.index
    if index == torch.cuda.current_device():
        rt.forward_ex_packed(args, _raw_stream(index), what)
    else:  # the runtime launches in the calling thread's current context: make it q's device's
        with torch.cuda.device(index):
            rt.forward_ex_packed(args, _raw_stream(index), what)


def _varlen_call(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, decode_seqs, decode_max_q, block_table, seqused_k,
                 ptr=_address):
    """The _Call of attention_varlen: packed K/V, or (block_table given) a paged cache."""
    if block_table is None:
        if seqused_k is not None:
            raise _invalid("seqused_k: only with block_table (packed K/V take their lengths from cu_seqlens_k)")
        return _varlen_args(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, decode_seqs, decode_max_q, ptr)
    if cu_k is not None:
        raise _invalid("cu_seqlens_k: must be None with block_table (the keys are the pages', seqused_k long)")
    return _paged_varlen_args(q, k, v, cu_q, seqused_k, block_table, max_q, max_k, causal, scale, decode_seqs,
                              decode_max_q, ptr)


def _varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, return_lse, decode_seqs, decode_max_q, runtime,
            out=None, check_tables=False, block_table=None, seqused_k=None):
    call = _varlen_call(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, decode_seqs, decode_max_q, block_table,
                        seqused_k)
    o = torch.empty_like(q) if out is None else _check_out(out, q)
    lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32, device=q.device) if return_lse else None
    if q.shape[0] == 0 or k.shape[0] == 0:
        # No rows, or no keys in the whole batch (an empty tensor has no address for the library
        # to take): every row sees no key, so o = 0 and lse = -inf, without a launch.
        o.zero_()
        if lse is not None:
            lse.fill_(float("-inf"))
        return o, lse
    tables = None
    if check_tables:
        tables = (dict(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k) if block_table is None else
                  dict(cu_seqlens_q=cu_q, block_table=block_table, seqlens_k=seqused_k))
    _launch(runtime, call, o, lse, "flashtune.attention_varlen", tables)
    return o, lse


def _kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_k, causal, scale, return_lse, runtime, out=None,
             check_tables=False):
    call = _kvcache_args(q, k_cache, v_cache, cache_seqlens, block_table, max_k, causal, scale)
    o = torch.empty_like(q) if out is None else _check_out(out, q)
    lse = None
    if return_lse:
        lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32, device=q.device)
    tables = dict(block_table=block_table, seqlens_k=cache_seqlens) if check_tables else None
    _launch(runtime, call, o, lse, "flashtune.attention_with_kvcache", tables)
    return o, lse


def _plan_of(runtime, call):
    """The runtime's Plan of a checked call (its addresses placeholders), as ft_forward_ex would
    launch it: ft_plan_ex on its args, so a fallback the call's tables or strides cause shows."""
    rt = runtime if runtime is not None else _runtime.default_runtime()
    code, d, causal, batch, nq, nk, hq, hkv = call.problem
    problem = _runtime.Problem(_capi.DTYPE_NAMES[code], int(d), int(batch), int(nq), int(hq), int(nk), int(hkv),
                               bool(causal))
    o_strides = call.strides[0]  # o like q
    # No mixed-batch fields: plan_varlen plans a mixed batch's two launches one at a time.
    args = _pack_positional(call.layout, call.problem, call.scale, call.qkv + (_PLACEHOLDER, 0),
                            call.strides + (o_strides,), call.paged, call.varlen, (0, 0), (0, 0))
    return rt.plan_call(args, problem)


def _int_length(k_cache, v_cache, cache_seqlens, block_table, max_k):
    """(k_cache, v_cache, cache_seqlens) of a call whose cache_seqlens may be an int: every sequence
    holds that many keys, the cache's first ones, so the caches become views of them and the
    lengths None (no copy, nothing on the device)."""
    if isinstance(cache_seqlens, torch.Tensor) or cache_seqlens is None:
        return k_cache, v_cache, cache_seqlens
    n = _count("cache_seqlens", cache_seqlens, 0)
    if block_table is not None:
        raise _invalid(f"cache_seqlens: {n}; with block_table it must be an int32 tensor [batch]")
    if k_cache.dim() == 4 and n > k_cache.shape[1]:
        raise _invalid(f"cache_seqlens: {n}; the cache holds {k_cache.shape[1]} keys a sequence (k_cache.shape[1])")
    if n == 0:
        raise _invalid("cache_seqlens: 0; pass a tensor of zeros for sequences without keys")
    if max_k not in (0, n):
        raise _invalid(f"max_seqlen_k: {max_k}; cache_seqlens {n} gives every sequence {n} keys")
    return k_cache[:, :n], v_cache[:, :n], None


def plan_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal=False, decode_seqs=0,
                decode_max_seqlen_q=0, block_table=None, seqused_k=None, runtime=None):
    """What attention_varlen with these arguments would launch, and why: a list of Plans, one per
    launch (a mixed batch's decode part first, then its prefill part). Takes meta tensors too."""
    _require_tensors(("cu_seqlens_k", "block_table", "seqused_k"), q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q,
                     cu_seqlens_k=cu_seqlens_k, block_table=block_table, seqused_k=seqused_k)
    call = _varlen_call(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, _flag("causal", causal), 0.0,
                        decode_seqs, decode_max_seqlen_q, block_table, seqused_k, _placeholder_address)
    batch, longest_q = call.problem[3], call.problem[4]
    if decode_seqs == 0 or longest_q <= 16:  # one launch (the library runs it as one call)
        return [_plan_of(runtime, call)]
    if not 1 <= decode_max_seqlen_q <= min(16, longest_q):
        raise _invalid(f"decode_max_seqlen_q: {decode_max_seqlen_q}; must be in [1, {min(16, longest_q)}] "
                       "(at most 16 and max_seqlen_q) when decode_seqs is set")
    decode = call.problem[:3] + (decode_seqs, decode_max_seqlen_q) + call.problem[5:]
    plans = [_plan_of(runtime, call._replace(problem=decode))] if decode_seqs > 0 else []
    if decode_seqs < batch:
        plans.append(_plan_of(runtime, call._replace(problem=call.problem[:3] + (batch - decode_seqs,) +
                                                      call.problem[4:])))
    return plans


def plan_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *, causal=False, max_seqlen_k=None,
                      runtime=None):
    """What attention_with_kvcache with these arguments would launch, and why: a Plan. Takes meta
    tensors too."""
    _require_tensors(("block_table",), q=q, k_cache=k_cache, v_cache=v_cache, block_table=block_table)
    max_k = 0 if max_seqlen_k is None else _count("max_seqlen_k", max_seqlen_k, 1)
    k_cache, v_cache, cache_seqlens = _int_length(k_cache, v_cache, cache_seqlens, block_table, max_k)
    call = _kvcache_args(q, k_cache, v_cache, cache_seqlens, block_table, max_k, _flag("causal", causal), 0.0,
                         _placeholder_address)
    return _plan_of(runtime, call)


def _no_lse(q):
    return q.new_empty((0,), dtype=torch.float32)


@torch.library.custom_op("flashtune::attention_varlen", mutates_args=())
def _varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
               cu_seqlens_k: Optional[torch.Tensor], max_seqlen_q: int, max_seqlen_k: int, causal: bool,
               softmax_scale: float, return_lse: bool, decode_seqs: int, decode_max_seqlen_q: int, runtime: int,
               block_table: Optional[torch.Tensor] = None,
               seqused_k: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    o, lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale,
                     return_lse, decode_seqs, decode_max_seqlen_q, runtime, None, False, block_table, seqused_k)
    return o, _no_lse(q) if lse is None else lse


@_varlen_op.register_fake
def _fake_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale, return_lse,
                 decode_seqs, decode_max_seqlen_q, runtime, block_table=None, seqused_k=None):
    _varlen_call(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale, decode_seqs,
                 decode_max_seqlen_q, block_table, seqused_k, _no_address)
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32) if return_lse else _no_lse(q)
    return torch.empty_like(q), lse


@torch.library.custom_op("flashtune::attention_kvcache", mutates_args=())
def _kvcache_op(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: Optional[torch.Tensor],
                block_table: Optional[torch.Tensor], max_seqlen_k: int, causal: bool, softmax_scale: float,
                return_lse: bool, runtime: int) -> tuple[torch.Tensor, torch.Tensor]:
    o, lse = _kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale,
                      return_lse, runtime)
    return o, _no_lse(q) if lse is None else lse


@_kvcache_op.register_fake
def _fake_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale, return_lse,
                  runtime):
    _kvcache_args(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale, _no_address)
    lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32) if return_lse else _no_lse(q)
    return torch.empty_like(q), lse


# The same calls writing o into a caller's tensor (out=, as engines pass their output buffer);
# they return lse (no elements unless asked for).
@torch.library.custom_op("flashtune::attention_varlen_out", mutates_args=("out",))
def _varlen_out_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                   cu_seqlens_k: Optional[torch.Tensor], max_seqlen_q: int, max_seqlen_k: int, causal: bool,
                   softmax_scale: float, return_lse: bool, decode_seqs: int, decode_max_seqlen_q: int, runtime: int,
                   out: torch.Tensor, block_table: Optional[torch.Tensor] = None,
                   seqused_k: Optional[torch.Tensor] = None) -> torch.Tensor:
    lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale, return_lse,
                  decode_seqs, decode_max_seqlen_q, runtime, out, False, block_table, seqused_k)[1]
    return _no_lse(q) if lse is None else lse


@_varlen_out_op.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale, return_lse,
      decode_seqs, decode_max_seqlen_q, runtime, out, block_table=None, seqused_k=None):
    _check_out(out, q)
    return _fake_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, softmax_scale,
                        return_lse, decode_seqs, decode_max_seqlen_q, runtime, block_table, seqused_k)[1]


@torch.library.custom_op("flashtune::attention_kvcache_out", mutates_args=("out",))
def _kvcache_out_op(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                    cache_seqlens: Optional[torch.Tensor], block_table: Optional[torch.Tensor], max_seqlen_k: int,
                    causal: bool, softmax_scale: float, return_lse: bool, runtime: int,
                    out: torch.Tensor) -> torch.Tensor:
    lse = _kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale, return_lse,
                   runtime, out)[1]
    return _no_lse(q) if lse is None else lse


@_kvcache_out_op.register_fake
def _(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale, return_lse, runtime, out):
    _check_out(out, q)
    return _fake_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_seqlen_k, causal, softmax_scale,
                         return_lse, runtime)[1]


def _no_backward(ctx, *grads):
    raise NotImplementedError("flashtune: attention_varlen and attention_with_kvcache have no backward pass (the "
                              "library's serves the dense layout: flashtune.attention)")


def _setup_nothing(ctx, inputs, output):
    pass  # nothing to save: backward only raises


_varlen_op.register_autograd(_no_backward, setup_context=_setup_nothing)
_kvcache_op.register_autograd(_no_backward, setup_context=_setup_nothing)


def _no_check_when_traced(check_tables):
    """check_tables reads the tables' values on the host: not where the call is traced, or its
    tensors have no values (meta, fake)."""
    if check_tables:
        raise _invalid("check_tables=True: only for eager calls on CUDA tensors (it copies the tables to the host); "
                       "not under torch.compile, autograd or tensor subclasses")


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal=False,
                     softmax_scale=None, return_lse=False, decode_seqs=0, decode_max_seqlen_q=0, block_table=None,
                     seqused_k=None, out=None, check_tables=False, runtime=None):
    """Attention over a packed batch of sequences (flash_attn_varlen_func's layout; see the
    module docstring): o [total_q, Hq, D], or (o, lse [Hq, total_q]).
    block_table, seqused_k: the keys in a paged cache instead (vLLM's call): k/v are page pools
    [num_blocks, block_size, Hkv, D], block_table [B, max_blocks] and seqused_k [B] int32,
    cu_seqlens_k None.
    out: a tensor like q to write o into (returned as o), None for a new one.
    check_tables: copy the offsets (and the page table and lengths) to the host first and check
    them exactly (synchronises; eager calls only), for debugging an engine's tables.
    runtime: a flashtune.Runtime, None for the default one."""
    scale = _scale(softmax_scale)
    causal, return_lse, check_tables = (_flag("causal", causal), _flag("return_lse", return_lse),
                                        _flag("check_tables", check_tables))
    _require_tensors(("cu_seqlens_k", "block_table", "seqused_k", "out"), q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q,
                     cu_seqlens_k=cu_seqlens_k, block_table=block_table, seqused_k=seqused_k, out=out)
    if _direct(q, k, v, cu_seqlens_q, cu_seqlens_k, block_table, seqused_k, out):
        o, lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, return_lse,
                         decode_seqs, decode_max_seqlen_q, runtime if runtime is not None else 0, out,
                         check_tables, block_table, seqused_k)
        return (o, lse) if return_lse else o
    _no_check_when_traced(check_tables)
    _count("max_seqlen_q", max_seqlen_q, 1)  # the op's schema takes ints: refuse others here, by name
    _count("max_seqlen_k", max_seqlen_k, 1)
    _count("decode_seqs", decode_seqs, 0)
    _count("decode_max_seqlen_q", decode_max_seqlen_q, 0)
    args = (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, return_lse, decode_seqs,
            decode_max_seqlen_q, 0 if runtime is None else runtime.id)
    if out is None:
        o, lse = torch.ops.flashtune.attention_varlen(*args, block_table, seqused_k)
    else:
        _refuse_grad_with_out("attention_varlen", q, k, v)
        o, lse = out, torch.ops.flashtune.attention_varlen_out(*args, out, block_table, seqused_k)
    return (o, lse) if return_lse else o


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *, causal=False,
                           softmax_scale=None, return_lse=False, max_seqlen_k=None, out=None, check_tables=False,
                           runtime=None):
    """Attention of new queries over a K/V cache, dense or paged (flash_attn_with_kvcache without
    the append; see the module docstring): o [B, Nq, Hq, D], or (o, lse [B, Hq, Nq]).
    out: a tensor like q to write o into (returned as o), None for a new one.
    check_tables: copy cache_seqlens and block_table to the host first and check them exactly
    (synchronises; eager calls only), for debugging an engine's page tables.
    runtime: a flashtune.Runtime, None for the default one."""
    scale = _scale(softmax_scale)
    causal, return_lse, check_tables = (_flag("causal", causal), _flag("return_lse", return_lse),
                                        _flag("check_tables", check_tables))
    max_k = 0 if max_seqlen_k is None else _count("max_seqlen_k", max_seqlen_k, 1)
    _require_tensors(("block_table", "out"), q=q, k_cache=k_cache, v_cache=v_cache, block_table=block_table, out=out)
    k_cache, v_cache, cache_seqlens = _int_length(k_cache, v_cache, cache_seqlens, block_table, max_k)
    if _direct(q, k_cache, v_cache, cache_seqlens, block_table, out):
        o, lse = _kvcache(q, k_cache, v_cache, cache_seqlens, block_table, max_k, causal, scale, return_lse,
                          runtime if runtime is not None else 0, out, check_tables)
        return (o, lse) if return_lse else o
    _no_check_when_traced(check_tables)
    args = (q, k_cache, v_cache, cache_seqlens, block_table, max_k, causal, scale, return_lse,
            0 if runtime is None else runtime.id)
    if out is None:
        o, lse = torch.ops.flashtune.attention_kvcache(*args)
    else:
        _refuse_grad_with_out("attention_with_kvcache", q, k_cache, v_cache)
        o, lse = out, torch.ops.flashtune.attention_kvcache_out(*args, out)
    return (o, lse) if return_lse else o
