"""flashtune.attention as a PyTorch custom op (torch.library), over the C ABI through ctypes.

attention(q, k, v, causal=False, softmax_scale=None, return_lse=False):
  q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D] CUDA tensors, float16 or bfloat16, on one device; any
  batch/sequence/head strides the runtime accepts (16-byte aligned), the last dim contiguous
  (anything else is refused, naming the tensor: call .contiguous() yourself, since a hidden
  copy would cost as much as a short attention call). Hq a multiple of Hkv (GQA/MQA); causal
  masks align bottom-right. Returns o (torch.empty_like(q)), and with return_lse also lse
  float32 [B, Hq, Nq]. Runs on torch's current stream of q's device.

Registered ops: torch.ops.flashtune.attention(q, k, v, causal, softmax_scale, runtime) -> o and
torch.ops.flashtune.attention_lse(...) -> (o, lse); softmax_scale 0 means 1/sqrt(D), runtime 0
the default runtime (else a Runtime's id). Each has a fake implementation (shapes and strides
only), so torch.compile(fullgraph=True) and torch.export trace them without graph breaks.

Eager calls on plain CUDA tensors that need no autograd go straight to the launch: the
dispatcher's trip through the op's Python autograd and CUDA kernels costs more than the launch
itself (bench/python_op.py measures both). Under torch.compile or export, with fake/meta tensors,
tensor subclasses, an active dispatch or function mode, or inputs that require grad, the call
goes through torch.ops.flashtune.* so that tracers and autograd see it.

CUDA graphs: a launch allocates nothing but o/lse (from torch's allocator, which graph capture
handles) and never synchronises, so a warm call can be captured; the first call of a shape loads
its kernel (not capturable): run it once before capturing.

Autograd: there is no backward pass yet; backward through attention raises NotImplementedError
saying so (the forward itself works with inputs that require grad).

Errors: InvalidArgument (a ValueError) naming the argument, from Python's checks or the C ABI's
message; FlashtuneError for the rest ("no driver", "no device", ...). Nothing is launched then.

Thread safety: calls from many threads are safe; each launches on its own current stream.
"""
import math

import torch

from . import _capi, _runtime

_DTYPE_CODES = {torch.float16: _capi.DTYPES["f16"], torch.bfloat16: _capi.DTYPES["bf16"]}
_pack_struct = _capi.FORWARD_ARGS.pack


def _check(q, k, v):
    """(B, Nq, Hq, D, Nk, Hkv, dtype code, q/k/v strides) of a call, after the checks the C ABI
    cannot make (it sees one shape and raw pointers); InvalidArgument naming the tensor otherwise.
    Each attribute is read once: this is most of a call's host time."""
    B, Nq, Hq, D, Nk, Hkv = _runtime.shape_of(q, k, v)
    dtype, device = q.dtype, q.device
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        raise _runtime.invalid(f"q.dtype: {dtype} is not supported; allowed: torch.float16, torch.bfloat16")
    if k.dtype != dtype or v.dtype != dtype:
        name, t = ("k", k) if k.dtype != dtype else ("v", v)
        raise _runtime.invalid(f"{name}.dtype: {t.dtype} differs from q.dtype {dtype}")
    if k.device != device or v.device != device:
        name, t = ("k", k) if k.device != device else ("v", v)
        raise _runtime.invalid(f"{name}.device: {t.device} differs from q.device {device}")
    if not (q.is_cuda or q.is_meta):  # meta: shapes only (the fake implementation)
        raise _runtime.invalid(f"q.device: {device}; flashtune runs on CUDA tensors")
    strides = q.stride(), k.stride(), v.stride()
    for name, s in zip("qkv", strides):
        if s[3] != 1:
            raise _runtime.invalid(f"{name}.stride(3): {s[3]}; the last dim must be contiguous (stride 1): "
                                   f"pass {name}.contiguous()")
    return B, Nq, Hq, D, Nk, Hkv, code, strides


def pack_args(q, k, v, o, lse=None, causal=False, softmax_scale=None):
    """The C ABI's ft_forward_args for attention(q, k, v) into o (and lse, may be None), as bytes
    for Runtime.forward_packed: for callers that reuse outputs and arguments across launches
    (timing loops; bench/perf_report.py). Checks as attention() does."""
    dims = _check(q, k, v)
    if o.shape != q.shape or o.dtype != q.dtype or o.device != q.device or o.stride(3) != 1:
        raise _runtime.invalid(f"o: {o.dtype} {tuple(o.shape)} on {o.device}, stride(3) {o.stride(3)}; must be "
                               f"{q.dtype} {tuple(q.shape)} on {q.device} with the last dim contiguous")
    B, Nq, Hq = dims[0], dims[1], dims[2]
    if lse is not None and (lse.shape != (B, Hq, Nq) or lse.dtype != torch.float32 or lse.device != q.device
                            or not lse.is_contiguous()):
        raise _runtime.invalid(f"lse: {lse.dtype} {tuple(lse.shape)} on {lse.device}; must be a contiguous "
                               f"torch.float32 {(B, Hq, Nq)} on {q.device}")
    return _pack(dims, q, k, v, o, lse, bool(causal), _scale(softmax_scale))


def _pack(dims, q, k, v, o, lse, causal, scale):
    B, Nq, Hq, D, Nk, Hkv, code, (qs, ks, vs) = dims
    os_ = o.stride()
    return _pack_struct(code, D, causal, B, Nq, Nk, Hq, Hkv, scale,
                        q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), 0 if lse is None else lse.data_ptr(),
                        qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], vs[0], vs[1], vs[2], os_[0], os_[1], os_[2])


# The raw cudaStream_t of a device's current stream without building a torch.cuda.Stream (the
# private call inductor's generated code uses); the public spelling where it is missing.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda device: torch.cuda.current_stream(device).cuda_stream)


def _launch(q, k, v, causal, softmax_scale, runtime, with_lse):
    """o (and lse) of one call, launched on the current stream of q's device."""
    dims = _check(q, k, v)
    o = torch.empty_like(q)
    lse = torch.empty((dims[0], dims[2], dims[1]), dtype=torch.float32, device=q.device) if with_lse else None
    args = _pack(dims, q, k, v, o, lse, causal, softmax_scale)
    rt = runtime if isinstance(runtime, _runtime.Runtime) else _runtime.runtime_by_id(runtime)
    device = q.get_device()
    if device == torch.cuda.current_device():
        rt.forward_packed(args, _raw_stream(device))
    else:  # the runtime launches in the calling thread's current context: make it q's device's
        with torch.cuda.device(device):
            rt.forward_packed(args, _raw_stream(device))
    return o, lse


def _fake(q, k, v, with_lse):
    B, Nq, Hq = _check(q, k, v)[:3]
    o = torch.empty_like(q)
    if not with_lse:
        return o
    return o, q.new_empty((B, Hq, Nq), dtype=torch.float32)


@torch.library.custom_op("flashtune::attention", mutates_args=())
def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
                  runtime: int) -> torch.Tensor:
    return _launch(q, k, v, causal, softmax_scale, runtime, False)[0]


@torch.library.custom_op("flashtune::attention_lse", mutates_args=())
def _attention_lse_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
                      runtime: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _launch(q, k, v, causal, softmax_scale, runtime, True)


@_attention_op.register_fake
def _(q, k, v, causal, softmax_scale, runtime):
    return _fake(q, k, v, False)


@_attention_lse_op.register_fake
def _(q, k, v, causal, softmax_scale, runtime):
    return _fake(q, k, v, True)


def _no_backward(ctx, *grads):
    raise NotImplementedError(
        "flashtune.attention has no backward pass yet (forward only): run it under torch.no_grad() or "
        "torch.inference_mode(), or use torch.nn.functional.scaled_dot_product_attention where you train")


def _setup_nothing(ctx, inputs, output):
    pass  # nothing to save: backward only raises


for _op in (_attention_op, _attention_lse_op):
    _op.register_autograd(_no_backward, setup_context=_setup_nothing)


def _scale(softmax_scale):
    """softmax_scale for the C ABI (0 = its default 1/sqrt(D)); None passes the default."""
    if softmax_scale is None:
        return 0.0
    s = float(softmax_scale)
    if not (s > 0.0 and math.isfinite(s)):  # the library's rule; 0 would mean its default
        raise _runtime.invalid(f"softmax_scale: {softmax_scale}; allowed: a finite number > 0, or None for "
                               "1/sqrt(head_dim)")
    return s


def _eager_fast(q, k, v):
    """Whether a call may skip the dispatcher: plain CUDA tensors, no autograd, no tracing, no modes."""
    return (type(q) is torch.Tensor and type(k) is torch.Tensor and type(v) is torch.Tensor and q.is_cuda
            and not (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad))
            and not torch._C._is_torch_function_mode_enabled()
            and torch._C._len_torch_dispatch_stack() == 0)


def attention(q, k, v, causal=False, softmax_scale=None, return_lse=False, *, runtime=None):
    """Attention forward on [B, N, H, D] CUDA tensors (see the module docstring); o, or (o, lse).
    runtime: a flashtune.Runtime, None for the default one."""
    scale = _scale(softmax_scale)
    causal = bool(causal)
    if not torch.compiler.is_compiling() and _eager_fast(q, k, v):
        o, lse = _launch(q, k, v, causal, scale, runtime if runtime is not None else 0, return_lse)
        return (o, lse) if return_lse else o
    rid = 0 if runtime is None else runtime.id
    if return_lse:
        return torch.ops.flashtune.attention_lse(q, k, v, causal, scale, rid)
    return torch.ops.flashtune.attention(q, k, v, causal, scale, rid)
