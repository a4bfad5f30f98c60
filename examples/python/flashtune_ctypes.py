"""flashtune's C ABI (include/flashtune/flashtune.h) from Python, through ctypes.

Pure ctypes: no torch, no numpy. The structs mirror the C header field for field; keep them in
step with it. Runtime wraps one ft_runtime handle; its methods raise FlashtuneError with the
status name and ft_last_error() when a call fails.

    from flashtune_ctypes import Runtime, Problem, forward_args
    with Runtime("build/libflashtune.so", "flashtune.db") as rt:
        print(rt.plan(Problem.make("bf16", 128, False, 2, 1024, 1024, 16, 16)).variant_uri)
        args = forward_args(problem, q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, q_str, k_str, v_str, o_str)
        rt.forward(args, stream_handle)

Thread safety: as the C ABI's: a Runtime may be used from many threads; close() must not race.
"""
import ctypes

FT_DTYPE = {"f16": 1, "bf16": 2}
FT_INVALID_ARGUMENT = 1


class FlashtuneError(RuntimeError):
    """A flashtune call returned a status other than FT_OK."""

    def __init__(self, what, status, status_name, message):
        # ft_last_error() usually starts with the status name already.
        detail = message if message.startswith(status_name) else f"{status_name}: {message}"
        super().__init__(f"{what} failed: {detail}")
        self.status = status
        self.status_name = status_name


class Problem(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
                ("batch", ctypes.c_int64), ("seqlen_q", ctypes.c_int64), ("seqlen_k", ctypes.c_int64),
                ("heads_q", ctypes.c_int64), ("heads_kv", ctypes.c_int64)]

    @classmethod
    def make(cls, dtype, head_dim, causal, batch, seqlen_q, seqlen_k, heads_q, heads_kv):
        """dtype is "bf16" or "f16" (or an FT_DTYPE_* value)."""
        code = FT_DTYPE[dtype] if isinstance(dtype, str) else int(dtype)
        return cls(code, head_dim, int(bool(causal)), batch, seqlen_q, seqlen_k, heads_q, heads_kv)


Strides3 = ctypes.c_int64 * 3


class ForwardArgs(ctypes.Structure):
    _fields_ = [("problem", Problem), ("softmax_scale", ctypes.c_float),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p),
                ("q_strides", Strides3), ("k_strides", Strides3),
                ("v_strides", Strides3), ("o_strides", Strides3)]


class BackwardArgs(ctypes.Structure):
    _fields_ = [("forward", ForwardArgs), ("d_o", ctypes.c_void_p), ("dq", ctypes.c_void_p),
                ("dk", ctypes.c_void_p), ("dv", ctypes.c_void_p),
                ("d_o_strides", Strides3), ("dq_strides", Strides3), ("dk_strides", Strides3),
                ("dv_strides", Strides3), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_int64),
                ("deterministic", ctypes.c_int)]


def backward_args(forward, d_o, dq, dk, dv, d_o_strides, dq_strides, dk_strides, dv_strides, workspace,
                  workspace_bytes, deterministic=False):
    """BackwardArgs from a ForwardArgs (its o and lse as the forward wrote them), device pointers
    (ints) and {batch, seq, head} strides."""
    return BackwardArgs(forward, d_o, dq, dk, dv, Strides3(*d_o_strides), Strides3(*dq_strides),
                        Strides3(*dk_strides), Strides3(*dv_strides), workspace, workspace_bytes,
                        int(bool(deterministic)))


class PlanInfo(ctypes.Structure):
    _fields_ = [("variant_uri_", ctypes.c_char * 128), ("source", ctypes.c_int), ("source_name_", ctypes.c_char * 16),
                ("bucket_", ctypes.c_char * 64), ("tuned_bucket_", ctypes.c_char * 64),
                ("tuned_median_us", ctypes.c_double), ("block_m", ctypes.c_int), ("block_n", ctypes.c_int),
                ("warps", ctypes.c_int), ("stages", ctypes.c_int), ("why_", ctypes.c_char * 1024),
                ("family_", ctypes.c_char * 32)]

    # The char arrays as str, so callers need not decode.
    variant_uri = property(lambda s: s.variant_uri_.decode())
    source_name = property(lambda s: s.source_name_.decode())
    bucket = property(lambda s: s.bucket_.decode())
    tuned_bucket = property(lambda s: s.tuned_bucket_.decode())
    why = property(lambda s: s.why_.decode())
    family = property(lambda s: s.family_.decode())


def forward_args(problem, q, k, v, o, lse, q_strides, k_strides, v_strides, o_strides, softmax_scale=0.0):
    """ForwardArgs from device pointers (ints; lse may be 0/None) and {batch, seq, head} strides."""
    return ForwardArgs(problem, softmax_scale, q, k, v, o, lse or None,
                       Strides3(*q_strides), Strides3(*k_strides), Strides3(*v_strides), Strides3(*o_strides))


def load(lib_path):
    """The shared library at lib_path with every entry point's signature declared."""
    lib = ctypes.CDLL(lib_path)
    lib.ft_runtime_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ft_runtime_open.restype = ctypes.c_int
    lib.ft_runtime_close.argtypes = [ctypes.c_void_p]
    lib.ft_runtime_close.restype = None
    lib.ft_forward.argtypes = [ctypes.c_void_p, ctypes.POINTER(ForwardArgs), ctypes.c_void_p]
    lib.ft_forward.restype = ctypes.c_int
    lib.ft_plan.argtypes = [ctypes.c_void_p, ctypes.POINTER(Problem), ctypes.POINTER(PlanInfo)]
    lib.ft_plan.restype = ctypes.c_int
    lib.ft_plan_backward.argtypes = [ctypes.c_void_p, ctypes.POINTER(Problem), ctypes.POINTER(PlanInfo)]
    lib.ft_plan_backward.restype = ctypes.c_int
    lib.ft_backward_workspace_bytes.argtypes = [ctypes.POINTER(Problem), ctypes.POINTER(ctypes.c_int64)]
    lib.ft_backward_workspace_bytes.restype = ctypes.c_int
    lib.ft_backward.argtypes = [ctypes.c_void_p, ctypes.POINTER(BackwardArgs), ctypes.c_void_p]
    lib.ft_backward.restype = ctypes.c_int
    lib.ft_last_error.argtypes = []
    lib.ft_last_error.restype = ctypes.c_char_p
    lib.ft_status_name.argtypes = [ctypes.c_int]
    lib.ft_status_name.restype = ctypes.c_char_p
    lib.ft_version.argtypes = []
    lib.ft_version.restype = ctypes.c_char_p
    return lib


class Runtime:
    """One ft_runtime on a tuning database ("" or None: $FLASHTUNE_DB, else ./flashtune.db)."""

    def __init__(self, lib_path, db_path=None):
        self.lib = load(lib_path) if isinstance(lib_path, str) else lib_path
        self.handle = ctypes.c_void_p()
        self.check(self.lib.ft_runtime_open(db_path.encode() if db_path else None, ctypes.byref(self.handle)),
                    "ft_runtime_open")

    def check(self, rc, what):
        """Raises FlashtuneError for a status other than FT_OK."""
        if rc != 0:
            raise FlashtuneError(what, rc, self.lib.ft_status_name(rc).decode(), self.lib.ft_last_error().decode())

    def version(self):
        return self.lib.ft_version().decode()

    def plan(self, problem):
        """The PlanInfo ft_forward would launch for problem."""
        info = PlanInfo()
        self.check(self.lib.ft_plan(self.handle, ctypes.byref(problem), ctypes.byref(info)), "ft_plan")
        return info

    def forward(self, args, stream=None):
        """Launches on stream (an int CUstream handle; None/0 = the legacy default stream)."""
        self.check(self.lib.ft_forward(self.handle, ctypes.byref(args), ctypes.c_void_p(stream or None)),
                    "ft_forward")

    def plan_backward(self, problem):
        """The PlanInfo ft_backward would launch for problem."""
        info = PlanInfo()
        self.check(self.lib.ft_plan_backward(self.handle, ctypes.byref(problem), ctypes.byref(info)),
                   "ft_plan_backward")
        return info

    def backward_workspace_bytes(self, problem):
        """Device bytes ft_backward needs as workspace for problem."""
        out = ctypes.c_int64()
        self.check(self.lib.ft_backward_workspace_bytes(ctypes.byref(problem), ctypes.byref(out)),
                   "ft_backward_workspace_bytes")
        return out.value

    def backward(self, args, stream=None):
        """The backward pass (dq, dk, dv) on stream."""
        self.check(self.lib.ft_backward(self.handle, ctypes.byref(args), ctypes.c_void_p(stream or None)),
                   "ft_backward")

    def backward_raw(self, args_ref, stream_ptr):
        """ft_backward's status with no checks: for timing loops."""
        return self.lib.ft_backward(self.handle, args_ref, stream_ptr)

    def forward_raw(self, args_ref, stream_ptr):
        """ft_forward's status with no checks or conversions: for timing loops (pass byref(args), c_void_p)."""
        return self.lib.ft_forward(self.handle, args_ref, stream_ptr)

    def close(self):
        if self.handle:
            self.lib.ft_runtime_close(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
