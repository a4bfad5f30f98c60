"""Runtime, Problem and Plan: the C ABI's runtime as Python objects (no torch needed).

A Runtime is one ft_runtime on a tuning database: plan() says what it would launch for a
shape and why; attention(), attention_varlen() and attention_with_kvcache() (need torch) launch
through it. The module-level functions use
the default runtime, opened on first use on $FLASHTUNE_DB, else ./flashtune.db; a missing
database file or a machine without a GPU is not an error (plans are then heuristic; launches
fail with the library's "no driver"/"no device" message).

Lifetime: close() releases the runtime's kernels; a Runtime that is garbage-collected closes
itself, except at interpreter exit (the CUDA context may be gone by then). Keep a Runtime alive
while a CUDA graph that captured its launches may still replay.

Thread safety: a Runtime may be used from many threads (the C ABI's runtime is thread-safe);
close() must not race with other calls on it.
"""
import ctypes
import dataclasses
import itertools
import threading
import weakref

from . import _capi

# Runtimes by id, for the torch op (whose schema can carry an int, not an object). 0 = default.
_runtimes = weakref.WeakValueDictionary()
_ids = itertools.count(1)
_default_lock = threading.Lock()
_default = None

# torch dtype names (str(tensor.dtype)) as the C ABI's dtype names, so shapes can be read from
# tensors without importing torch.
_TENSOR_DTYPES = {"torch.float16": "f16", "torch.bfloat16": "bf16"}


@dataclasses.dataclass(frozen=True)
class Problem:
    """One attention shape: q [batch, seqlen_q, heads_q, head_dim], k/v [batch, seqlen_k,
    heads_kv, head_dim]. seqlen_k and heads_kv default to seqlen_q and heads_q."""
    dtype: str
    head_dim: int
    batch: int
    seqlen_q: int
    heads_q: int
    seqlen_k: int = None
    heads_kv: int = None
    causal: bool = False

    def __post_init__(self):
        object.__setattr__(self, "causal", flag("problem.causal", self.causal))
        if self.seqlen_k is None:
            object.__setattr__(self, "seqlen_k", self.seqlen_q)
        if self.heads_kv is None:
            object.__setattr__(self, "heads_kv", self.heads_q)

    @classmethod
    def from_tensors(cls, q, k, v, causal=False):
        """The problem of attention(q, k, v, causal) for [B, N, H, D] tensors (torch or any
        object with .shape and .dtype)."""
        B, Nq, Hq, D, Nk, Hkv = shape_of(q, k, v)
        dtype = _TENSOR_DTYPES.get(str(q.dtype))
        if dtype is None:
            raise invalid(f"q.dtype: {q.dtype} is not supported; allowed: torch.float16, torch.bfloat16")
        return cls(dtype, int(D), int(B), int(Nq), int(Hq), int(Nk), int(Hkv), flag("causal", causal))

    def _c(self):
        code = _capi.DTYPES.get(self.dtype)
        if code is None:
            raise invalid(f"problem.dtype: {self.dtype!r} is not a dtype; allowed: {', '.join(_capi.DTYPES)}")
        return _capi.Problem(code, self.head_dim, int(bool(self.causal)), self.batch, self.seqlen_q,
                             self.seqlen_k, self.heads_q, self.heads_kv)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the runtime launches for a problem, and why (every field of ft_plan_info)."""
    problem: Problem
    variant_uri: str       # "hopper_fwd_bf16_d128_bm128_bn128_wg2_s2_p0_causal"
    family: str            # "hopper_fwd"
    source: int            # 0 exact, 1 nearest, 2 heuristic, 3 neighbour (FT_PLAN_*)
    source_name: str       # "exact" / "nearest" / "heuristic" / "neighbour"
    bucket: str            # the problem's bucket
    tuned_bucket: str      # the winner's bucket, "" for heuristic
    tuned_median_us: float  # the winner's measured median, 0 when unknown
    block_m: int
    block_n: int
    warps: int
    stages: int
    why: str               # one sentence

    def __str__(self):
        return f"{self.variant_uri} ({self.source_name}): {self.why}"


def invalid(message):
    """InvalidArgument for a check made in Python, worded like the library's."""
    return _capi.InvalidArgument(f"flashtune: {message}")


def flag(name, value):
    """A True/False argument; 0 and 1 pass as False and True, anything else is refused by name
    (bool() would read any object as a flag)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise invalid(f"{name}: {value!r}; allowed: True, False")


def shape_of(q, k, v):
    """(B, Nq, Hq, D, Nk, Hkv) of attention(q, k, v) after the checks the C ABI cannot make (it
    sees one shape): 4-D tensors, k and v alike, batch and head_dim as q's."""
    qs, ks, vs = q.shape, k.shape, v.shape
    if len(qs) == 4 and len(ks) == 4 and ks == vs and ks[0] == qs[0] and ks[3] == qs[3]:
        return qs[0], qs[1], qs[2], qs[3], ks[1], ks[2]  # the common case, tested at once
    for name, s in (("q", qs), ("k", ks), ("v", vs)):
        if len(s) != 4:
            raise invalid(f"{name}: must be 4-D [batch, seqlen, heads, head_dim]; got shape {tuple(s)}")
    if tuple(vs) != tuple(ks):
        raise invalid(f"v: shape {tuple(vs)} differs from k's {tuple(ks)}")
    raise invalid(f"k: shape {tuple(ks)} does not match q's {tuple(qs)} in batch (dim 0) and head_dim (dim 3)")


def _plan_from(problem, info):
    """A Plan of `problem` from an ft_plan_info."""
    t = _capi.text
    return Plan(problem, t(info.variant_uri), t(info.family), info.source, t(info.source_name), t(info.bucket),
                t(info.tuned_bucket), info.tuned_median_us, info.block_m, info.block_n, info.warps, info.stages,
                t(info.why))


class Runtime:
    """One flashtune runtime on a tuning database (None or "": $FLASHTUNE_DB, else
    ./flashtune.db). Opening never fails for a missing file or a machine without a GPU; a
    database that exists but cannot be used raises FlashtuneError with the library's message."""

    def __init__(self, db=None):
        fn = _capi.function
        handle = ctypes.c_void_p()
        _capi.check(fn("ft_runtime_open")(db.encode() if db else None, ctypes.byref(handle)),
                    f"flashtune.Runtime(db={db!r})")
        self.db = db
        self._handle = handle.value
        self._forward, self._plan = fn("ft_forward"), fn("ft_plan")
        self._forward_ex = None
        self._workspace_sizes = {}
        self.id = next(_ids)
        _runtimes[self.id] = self
        self._finalizer = weakref.finalize(self, fn("ft_runtime_close"), self._handle)
        self._finalizer.atexit = False  # at exit the CUDA context may already be torn down

    def plan(self, problem_or_q, k=None, v=None, *, causal=False, backward=False, layout="dense"):
        """The Plan for a Problem, or for attention(q, k, v, causal) on tensors; with backward,
        the plan of its backward pass (ft_plan_backward). layout: "dense", or "paged" / "varlen"
        for what ft_forward_ex launches on that layout (ft_plan_ex: a paged call has buckets of
        its own; seqlen_k / seqlen_q are then the call's longest)."""
        problem = problem_or_q if isinstance(problem_or_q, Problem) else Problem.from_tensors(problem_or_q, k, v, causal)
        if layout not in _capi.LAYOUTS:
            raise invalid(f"flashtune.plan: layout={layout!r}; allowed: {', '.join(_capi.LAYOUTS)}")
        if backward and layout != "dense":
            raise invalid(f"flashtune.plan: layout={layout!r} with backward; the backward pass serves the dense layout")
        info = _capi.PlanInfo()
        c_problem = problem._c()
        if layout != "dense":
            args = _capi.AttentionArgs.make(layout, c_problem)
            _capi.check(_capi.function("ft_plan_ex")(self._live(), ctypes.byref(args), ctypes.byref(info)),
                        "flashtune.plan")
        else:
            fn = _capi.function("ft_plan_backward") if backward else self._plan
            _capi.check(fn(self._live(), ctypes.byref(c_problem), ctypes.byref(info)), "flashtune.plan")
        return _plan_from(problem, info)

    def plan_call(self, args, problem, what="flashtune.plan"):
        """The Plan of one call, what ft_forward_ex launches for ATTENTION_ARGS bytes `args`
        (ft_plan_ex: which tables the call has, and its strides, may make the runtime fall back
        to another family; the plan then says so). `problem`: the call's Problem, for the Plan."""
        info = _capi.PlanInfo()
        _capi.check(_capi.function("ft_plan_ex:bytes")(self._live(), args, ctypes.byref(info)), what)
        return _plan_from(problem, info)

    def attention(self, q, k, v, causal=False, softmax_scale=None, return_lse=False, *, deterministic=False,
                  out=None):
        """flashtune.attention through this runtime (see there)."""
        from . import ops  # torch only when attention is used
        return ops.attention(q, k, v, causal, softmax_scale, return_lse, runtime=self, deterministic=deterministic,
                             out=out)

    def attention_varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, **options):
        """flashtune.attention_varlen through this runtime (see there)."""
        from . import layouts
        return layouts.attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                        runtime=self, **options)

    def attention_with_kvcache(self, q, k_cache, v_cache, cache_seqlens=None, block_table=None, **options):
        """flashtune.attention_with_kvcache through this runtime (see there)."""
        from . import layouts
        return layouts.attention_with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, runtime=self, **options)

    def forward_packed(self, args, stream):
        """ft_forward on FORWARD_ARGS bytes and a CUstream handle (int; 0 = legacy default
        stream). Raises FlashtuneError with the library's message; launches nothing then."""
        status = self._forward(self._live(), args, stream)
        if status != _capi.FT_OK:
            raise _capi.error(status, "flashtune.attention")

    def forward_ex_packed(self, args, stream, what="flashtune.attention"):
        """ft_forward_ex on ATTENTION_ARGS bytes and a CUstream handle (int). Raises
        FlashtuneError (InvalidArgument for bad input) with the library's message, naming `what`;
        launches nothing then."""
        if self._forward_ex is None:  # looked up on first use: an older library lacks it
            self._forward_ex = _capi.function("ft_forward_ex:bytes")
        status = self._forward_ex(self._live(), args, stream)
        if status != _capi.FT_OK:
            raise _capi.error(status, what)

    def workspace_bytes(self, layout, problem, what="flashtune.attention"):
        """Device bytes ft_forward_ex needs as workspace for a call of `layout` and `problem`
        (the 8-tuple of _capi.pack_attention_args), from ft_workspace_size. The answer depends on
        these alone, so it is kept: a later call of the same shape asks the library nothing."""
        key = (layout, problem)
        size = self._workspace_sizes.get(key)
        if size is None:
            out = ctypes.c_int64()
            args = _capi.pack_attention_args(layout, problem)
            _capi.check(_capi.function("ft_workspace_size:bytes")(self._live(), args, ctypes.byref(out)), what)
            size = self._workspace_sizes[key] = out.value
        return size

    def backward_workspace_bytes(self, problem):
        """Device bytes the backward pass of `problem` needs as workspace (ft_backward_workspace_bytes)."""
        out = ctypes.c_int64()
        c_problem = problem._c()
        _capi.check(_capi.function("ft_backward_workspace_bytes")(ctypes.byref(c_problem), ctypes.byref(out)),
                    "flashtune.backward_workspace_bytes")
        return out.value

    def backward(self, args, stream):
        """ft_backward on a _capi.BackwardArgs and a CUstream handle (int). Raises FlashtuneError
        with the library's message; launches nothing then."""
        status = _capi.function("ft_backward")(self._live(), ctypes.byref(args), stream)
        if status != _capi.FT_OK:
            raise _capi.error(status, "flashtune.attention backward")

    def close(self):
        """Releases the runtime and its kernels (synchronise first: launches may be in flight)."""
        self._finalizer()
        self._handle = None

    def _live(self):
        if self._handle is None:
            raise _capi.InvalidArgument("flashtune.Runtime: used after close()")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"flashtune.Runtime(db={self.db!r})"


def default_runtime():
    """The runtime module-level calls use, opened on first use on $FLASHTUNE_DB or ./flashtune.db."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Runtime()
    return _default


def runtime_by_id(runtime_id):
    """The live Runtime with this id (0: the default runtime)."""
    if runtime_id == 0:
        return default_runtime()
    rt = _runtimes.get(runtime_id)
    if rt is None:
        raise _capi.InvalidArgument(f"flashtune: runtime {runtime_id} was closed or collected")
    return rt


def plan(problem_or_q, k=None, v=None, *, causal=False, layout="dense"):
    """What flashtune.attention (layout "dense"), or ft_forward_ex on a "paged" / "varlen"
    layout, would launch, and why: default_runtime().plan(...)."""
    return default_runtime().plan(problem_or_q, k, v, causal=causal, layout=layout)
