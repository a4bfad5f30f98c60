"""The C ABI (include/flashtune/flashtune.h) through ctypes: the package's only binding.

Contract: the structs below mirror the C header field for field (tests/python check sizes and
offsets against it); `library()` loads libflashtune once per process and declares every entry
point's signature from `_SIGNATURES`; `check()` turns a status other than FT_OK into a
FlashtuneError carrying ft_last_error(), which names the bad argument. Nothing here imports torch.

Where the library comes from: $FLASHTUNE_LIB (a path to libflashtune.so, e.g. a build tree's),
else the copy the wheel installs next to this file (lib/libflashtune.so). Its one dependency
outside the C library, libnvrtc.so.13, comes from the library path (the CUDA toolkit), else from
the pip package PyTorch's CUDA 13 builds install (nvidia/cu13/lib, see nvrtc_dir()).

Adding an entry point (decode, varlen, paged, backward ...): mirror its structs here, add one row to
`_SIGNATURES`, and call it through `library()` + `check()`; a library that lacks the function
raises FlashtuneError naming it when it is first called (see `function()`), not at import.

Thread safety: loading is guarded by a lock; ft_last_error() is per thread and ctypes calls run
on the calling thread, so check() reads the message of the call it follows.
"""
import ctypes
import os
import struct
import sys
import threading

# Status codes, as flashtune.h numbers them.
FT_OK = 0
FT_INVALID_ARGUMENT = 1
FT_NO_DRIVER = 4
FT_NO_DEVICE = 5

# Element types (zero is deliberately not a dtype in the C ABI).
DTYPES = {"f16": 1, "bf16": 2}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}


class FlashtuneError(RuntimeError):
    """A flashtune call failed. `status` is the FT_* code (None for errors found in Python),
    `status_name` its name ("invalid_argument", "no_driver", ...); the message is the library's."""

    def __init__(self, message, status=None, status_name=None):
        super().__init__(message)
        self.status = status
        self.status_name = status_name


class InvalidArgument(FlashtuneError, ValueError):
    """Bad input (FT_INVALID_ARGUMENT, or found in Python): the message names the argument and
    the allowed values; nothing was launched."""

    def __init__(self, message, status=FT_INVALID_ARGUMENT, status_name="invalid_argument"):
        super().__init__(message, status, status_name)


# Tracebacks name them as users import them.
FlashtuneError.__module__ = InvalidArgument.__module__ = "flashtune"


class Problem(ctypes.Structure):
    """ft_problem: one attention shape."""
    _fields_ = [("dtype", ctypes.c_int), ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
                ("batch", ctypes.c_int64), ("seqlen_q", ctypes.c_int64), ("seqlen_k", ctypes.c_int64),
                ("heads_q", ctypes.c_int64), ("heads_kv", ctypes.c_int64)]


Strides3 = ctypes.c_int64 * 3


class ForwardArgs(ctypes.Structure):
    """ft_forward_args; the hot path packs the same bytes with FORWARD_ARGS (below)."""
    _fields_ = [("problem", Problem), ("softmax_scale", ctypes.c_float),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p),
                ("q_strides", Strides3), ("k_strides", Strides3),
                ("v_strides", Strides3), ("o_strides", Strides3)]


# ft_forward_args as one struct.pack format, native alignment: building a ctypes.Structure per
# call costs several microseconds, packing these bytes well under one. Field order and padding
# are ForwardArgs' (checked below at import and by the tests).
FORWARD_ARGS = struct.Struct("@iiiqqqqqfPPPPP12q")


# Layouts of ft_attention_args (FT_LAYOUT_*).
LAYOUTS = {"dense": 0, "paged": 1, "varlen": 2}


class AttentionArgs(ctypes.Structure):
    """ft_attention_args (ft_forward_ex, ft_workspace_size): every layout and decode's workspace."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("layout", ctypes.c_int), ("problem", Problem),
                ("softmax_scale", ctypes.c_float),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p),
                ("q_strides", Strides3), ("k_strides", Strides3),
                ("v_strides", Strides3), ("o_strides", Strides3),
                ("seqlens_k", ctypes.c_void_p), ("block_table", ctypes.c_void_p),
                ("block_table_stride", ctypes.c_int64), ("max_blocks_per_seq", ctypes.c_int64),
                ("num_blocks", ctypes.c_int64), ("block_size", ctypes.c_int32),
                ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
                ("total_q", ctypes.c_int64), ("total_k", ctypes.c_int64),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_int64),
                ("decode_seqs", ctypes.c_int64), ("decode_max_seqlen_q", ctypes.c_int64)]  # version 2

    @classmethod
    def make(cls, layout, problem, **fields):
        """Zero-filled args of `layout` ("dense", "paged", "varlen"), struct_size set; `fields`
        by name (strides as 3-tuples, pointers as ints)."""
        args = cls()
        args.struct_size = ctypes.sizeof(cls)
        args.layout = LAYOUTS[layout]
        args.problem = problem
        for name, value in fields.items():
            setattr(args, name, Strides3(*value) if name.endswith("_strides") else value)
        return args


# ft_attention_args as one struct.pack format (what FORWARD_ARGS is to ft_forward_args): the hot
# path of flashtune.attention_varlen / attention_with_kvcache. ATTENTION_FIELDS names its values
# in order (a strides field is three values); checked against AttentionArgs below and by the tests.
ATTENTION_ARGS = struct.Struct("@Ii iiiqqqqq f PPPPP 12q PPqqqi PPqq Pq qq")
ATTENTION_FIELDS = ("struct_size", "layout", "dtype", "head_dim", "causal", "batch", "seqlen_q", "seqlen_k",
                    "heads_q", "heads_kv", "softmax_scale", "q", "k", "v", "o", "lse", "q_strides", "k_strides",
                    "v_strides", "o_strides", "seqlens_k", "block_table", "block_table_stride",
                    "max_blocks_per_seq", "num_blocks", "block_size", "cu_seqlens_q", "cu_seqlens_k", "total_q",
                    "total_k", "workspace", "workspace_bytes", "decode_seqs", "decode_max_seqlen_q")


# Where each of ATTENTION_FIELDS lies in ATTENTION_ARGS' values: name -> (first index, count).
_ATTENTION_SLOTS = {}
for _name in ATTENTION_FIELDS:
    _ATTENTION_SLOTS[_name] = (sum(n for _, n in _ATTENTION_SLOTS.values()), 3 if _name.endswith("_strides") else 1)
_ATTENTION_ZEROS = [0] * sum(n for _, n in _ATTENTION_SLOTS.values())


def pack_attention_args(layout, problem, **fields):
    """ft_attention_args bytes: `layout` ("dense", "paged", "varlen"), `problem` as the 8-tuple
    (dtype code, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv), other fields by
    name (strides as 3-tuples, pointers as ints, 0 where left out). struct_size is this version's."""
    flat = _ATTENTION_ZEROS.copy()
    flat[0], flat[1] = ATTENTION_ARGS.size, LAYOUTS[layout]
    flat[2:10] = problem
    for name, value in fields.items():
        slot = _ATTENTION_SLOTS.get(name)
        if slot is None or slot[0] < 10:
            raise TypeError(f"pack_attention_args: unknown field {name!r}")
        first, count = slot
        if count == 1:
            flat[first] = value
        else:
            flat[first:first + 3] = value
    return ATTENTION_ARGS.pack(*flat)


def pack_attention_call(layout, problem, scale, pointers, strides, paged=(0,) * 6, varlen=(0,) * 4, workspace=(0, 0),
                        mixed=(0, 0)):
    """pack_attention_args by position, for the hot path (a fifth of its host time): pointers
    (q, k, v, o, lse), strides (q, k, v, o) 3-tuples, paged (seqlens_k, block_table,
    block_table_stride, max_blocks_per_seq, num_blocks, block_size), varlen (cu_seqlens_q,
    cu_seqlens_k, total_q, total_k), workspace (pointer, bytes), mixed (decode_seqs,
    decode_max_seqlen_q): ATTENTION_FIELDS' order."""
    qs, ks, vs, os_ = strides
    return ATTENTION_ARGS.pack(ATTENTION_ARGS.size, LAYOUTS[layout], *problem, scale, *pointers, *qs, *ks, *vs, *os_,
                               *paged, *varlen, *workspace, *mixed)


class BackwardArgs(ctypes.Structure):
    """ft_backward_args: the forward call's arguments (o and lse as it wrote them), the gradient
    of o, the gradients to write, the workspace (ft_backward_workspace_bytes) and the mode."""
    _fields_ = [("forward", ForwardArgs), ("d_o", ctypes.c_void_p), ("dq", ctypes.c_void_p),
                ("dk", ctypes.c_void_p), ("dv", ctypes.c_void_p),
                ("d_o_strides", Strides3), ("dq_strides", Strides3), ("dk_strides", Strides3),
                ("dv_strides", Strides3), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_int64),
                ("deterministic", ctypes.c_int)]


class PlanInfo(ctypes.Structure):
    """ft_plan_info: what ft_forward would launch for a problem, and why."""
    _fields_ = [("variant_uri", ctypes.c_char * 128), ("source", ctypes.c_int), ("source_name", ctypes.c_char * 16),
                ("bucket", ctypes.c_char * 64), ("tuned_bucket", ctypes.c_char * 64),
                ("tuned_median_us", ctypes.c_double), ("block_m", ctypes.c_int), ("block_n", ctypes.c_int),
                ("warps", ctypes.c_int), ("stages", ctypes.c_int), ("why", ctypes.c_char * 1024),
                ("family", ctypes.c_char * 32)]


for _packed, _mirror in ((FORWARD_ARGS, ForwardArgs), (ATTENTION_ARGS, AttentionArgs)):
    if _packed.size != ctypes.sizeof(_mirror):  # a platform where the two layouts differ
        raise ImportError(f"flashtune: {_mirror.__name__} packs to {_packed.size} bytes but is "
                          f"{ctypes.sizeof(_mirror)} bytes in C; this platform is not supported")

_P = ctypes.c_void_p
# Every entry point: name -> (return type, argument types). One row per C function.
_SIGNATURES = {
    "ft_runtime_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "ft_runtime_close": (None, [_P]),
    # args as a pointer to FORWARD_ARGS bytes (ctypes passes bytes without a copy).
    "ft_forward": (ctypes.c_int, [_P, ctypes.c_char_p, _P]),
    "ft_plan": (ctypes.c_int, [_P, ctypes.POINTER(Problem), ctypes.POINTER(PlanInfo)]),
    "ft_forward_ex": (ctypes.c_int, [_P, ctypes.POINTER(AttentionArgs), _P]),
    # ATTENTION_ARGS bytes, through second handles on the same symbols (library(): lib[symbol]).
    "ft_forward_ex:bytes": (ctypes.c_int, [_P, ctypes.c_char_p, _P]),
    "ft_workspace_size:bytes": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]),
    "ft_plan_ex:bytes": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(PlanInfo)]),
    # ATTENTION_ARGS bytes, then host copies of block_table, seqlens_k, cu_seqlens_q, cu_seqlens_k.
    "ft_check_tables": (ctypes.c_int, [ctypes.c_char_p, _P, _P, _P, _P]),
    "ft_workspace_size": (ctypes.c_int, [_P, ctypes.POINTER(AttentionArgs), ctypes.POINTER(ctypes.c_int64)]),
    "ft_backward": (ctypes.c_int, [_P, ctypes.POINTER(BackwardArgs), _P]),
    "ft_backward_workspace_bytes": (ctypes.c_int, [ctypes.POINTER(Problem), ctypes.POINTER(ctypes.c_int64)]),
    "ft_plan_backward": (ctypes.c_int, [_P, ctypes.POINTER(Problem), ctypes.POINTER(PlanInfo)]),
    "ft_plan_ex": (ctypes.c_int, [_P, ctypes.POINTER(AttentionArgs), ctypes.POINTER(PlanInfo)]),
    "ft_last_error": (ctypes.c_char_p, []),
    "ft_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "ft_version": (ctypes.c_char_p, []),
}

_lock = threading.Lock()
_lib = None
_functions = {}  # _SIGNATURES' names -> typed entry points of _lib
nvrtc_fallback = None  # the folder of the pip package's NVRTC when library() had to load it
_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """The libflashtune.so this process uses: $FLASHTUNE_LIB, else the package's own copy."""
    env = os.environ.get("FLASHTUNE_LIB")
    if env:
        return env
    return os.path.join(_HERE, "lib", "libflashtune.so")


def nvrtc_dir():
    """A folder holding the pip package's libnvrtc.so.13 (what torch's CUDA 13 wheels depend on),
    or None."""
    for root in sys.path:
        for sub in (("nvidia", "cu13", "lib"), ("nvidia", "cuda_nvrtc", "lib")):
            folder = os.path.join(root or ".", *sub)
            if os.path.exists(os.path.join(folder, "libnvrtc.so.13")):
                return folder
    return None


def _load(path):
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        folder = nvrtc_dir() if "libnvrtc" in str(e) else None
        if folder is None:
            raise
    # Loaded globally first, libnvrtc.so.13 satisfies libflashtune's dependency by its soname.
    ctypes.CDLL(os.path.join(folder, "libnvrtc.so.13"), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(path)
    global nvrtc_fallback
    nvrtc_fallback = folder
    return lib


def library():
    """The loaded library, every declared signature set. Raises FlashtuneError when it cannot load."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise FlashtuneError(f"libflashtune.so not found at {path}: install the package (pip install .) "
                                     "or set FLASHTUNE_LIB to a libflashtune.so")
            try:
                lib = _load(path)
            except OSError as e:  # usually a missing dependency, e.g. the CUDA toolkit's libnvrtc
                raise FlashtuneError(f"cannot load {path}: {e} (flashtune needs the CUDA 13 toolkit's "
                                     "NVRTC, libsqlite3 and libcrypto on the library path)") from None
            for name, (restype, argtypes) in _SIGNATURES.items():
                symbol, _, form = name.partition(":")
                try:  # lib[symbol] is a handle of its own, typed apart from lib.<symbol>
                    fn = lib[symbol] if form else getattr(lib, symbol)
                except AttributeError:
                    continue  # an older library: function() says so when it is asked for
                fn.restype, fn.argtypes = restype, argtypes
                _functions[name] = fn
            _lib = lib
    return _lib


def function(name):
    """The entry point `name` of the loaded library, typed as _SIGNATURES says ("symbol:form"
    names a second typing of one symbol); FlashtuneError when this library lacks it."""
    library()
    fn = _functions.get(name)
    if fn is None:
        raise FlashtuneError(f"{library_path()} has no {name.partition(':')[0]}: the library is older than this "
                             "package")
    return fn


def error(status, what):
    """The FlashtuneError for a failed call `what` that returned `status`."""
    lib = library()
    name = lib.ft_status_name(status).decode()
    message = lib.ft_last_error().decode()
    # The library's messages usually start with the status name already.
    detail = message if message.startswith(name) else f"{name}: {message}"
    cls = InvalidArgument if status == FT_INVALID_ARGUMENT else FlashtuneError
    return cls(f"{what}: {detail}", status, name)


def check(status, what):
    """Raises error(status, what) unless status is FT_OK."""
    if status != FT_OK:
        raise error(status, what)


def text(field):
    """A char[] field of a ctypes struct as str."""
    return field.decode(errors="replace")
