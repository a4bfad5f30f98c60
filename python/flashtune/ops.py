"""flashtune.attention as a PyTorch custom op (torch.library), over the C ABI through ctypes.

attention(q, k, v, causal=False, softmax_scale=None, return_lse=False, *, out=None):
  q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D] CUDA tensors, float16 or bfloat16, on one device; any
  batch/sequence/head strides the runtime accepts (16-byte aligned), the last dim contiguous
  (anything else is refused, naming the tensor: call .contiguous() yourself, since a hidden
  copy would cost as much as a short attention call). Hq a multiple of Hkv (GQA/MQA); causal
  masks align bottom-right. Returns o (torch.empty_like(q), or out= when given: a tensor like q,
  e.g. a view of a larger buffer; inference only), and with return_lse also lse float32
  [B, Hq, Nq]. Runs on torch's current stream of q's device.

Registered ops: torch.ops.flashtune.attention(q, k, v, causal, softmax_scale, runtime) -> o,
torch.ops.flashtune.attention_out(q, k, v, causal, softmax_scale, runtime, return_lse, out) -> lse
(o written into out: attention(..., out=...), inference only),
torch.ops.flashtune.attention_lse(..., deterministic=False) -> (o, lse) and
torch.ops.flashtune.attention_backward(d_o, q, k, v, o, lse, causal, softmax_scale, runtime,
deterministic) -> (dq, dk, dv); softmax_scale 0 means 1/sqrt(D), runtime 0
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

Autograd: the backward pass is flashtune's (ft_backward: hopper_bwd on sm_90a, fa2_bwd
elsewhere): a call whose inputs require grad goes through torch.ops.flashtune.attention_lse (the
forward keeps lse, which the backward needs) and its gradient is torch.ops.flashtune.attention_backward (another custom op with
a fake implementation, so torch.compile traces training graphs too). dq, dk, dv come back dense;
k/v expanded over heads get their gradients summed by expand's own backward. deterministic=True
makes the gradients bit-identical across runs. A gradient through lse itself is not supported
(NotImplementedError saying so).

Errors: InvalidArgument (a ValueError) naming the argument, from Python's checks or the C ABI's
message; FlashtuneError for the rest ("no driver", "no device", ...). Nothing is launched then.

Thread safety: calls from many threads are safe; each launches on its own current stream.
"""
import math
import numbers

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
    return _pack(dims, q, k, v, o, lse, _flag("causal", causal), _scale(softmax_scale))


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


def _check_out(out, q):
    """out= (a tensor: the public calls check that first) of a call on q: like q in shape, dtype and
    device, its last dim contiguous (the library refuses an out whose elements overlap)."""
    if out.shape != q.shape or out.dtype != q.dtype or out.device != q.device:
        raise _runtime.invalid(f"out: {out.dtype} {tuple(out.shape)} on {out.device}; must be {q.dtype} "
                               f"{tuple(q.shape)} on {q.device}")
    if out.stride(-1) != 1:
        raise _runtime.invalid(f"out.stride({out.dim() - 1}): {out.stride(-1)}; the last dim must be contiguous "
                               "(stride 1)")
    return out


def _launch(q, k, v, causal, softmax_scale, runtime, with_lse, out=None):
    """o (and lse) of one call, launched on the current stream of q's device; o is `out` when
    given."""
    dims = _check(q, k, v)
    o = torch.empty_like(q) if out is None else _check_out(out, q)
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


# deterministic only matters to the backward pass (its autograd formula reads it).
@torch.library.custom_op("flashtune::attention_lse", mutates_args=())
def _attention_lse_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
                      runtime: int, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return _launch(q, k, v, causal, softmax_scale, runtime, True)


@_attention_op.register_fake
def _(q, k, v, causal, softmax_scale, runtime):
    return _fake(q, k, v, False)


@_attention_lse_op.register_fake
def _(q, k, v, causal, softmax_scale, runtime, deterministic=False):
    return _fake(q, k, v, True)


def _backward_launch(d_o, q, k, v, o, lse, causal, softmax_scale, runtime, deterministic):
    """dq, dk, dv of one call through ft_backward, on the current stream of q's device."""
    B, Nq, Hq, D, Nk, Hkv, code, (qs, ks, vs) = dims = _check(q, k, v)
    if d_o.stride(3) != 1:  # autograd hands over whatever the next op produced
        d_o = d_o.contiguous()
    # Fresh, dense gradients: k/v may be views that overlap (expand), their gradients may not.
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    rt = runtime if isinstance(runtime, _runtime.Runtime) else _runtime.runtime_by_id(runtime)
    problem = _runtime.Problem(_capi.DTYPE_NAMES[code], int(D), int(B), int(Nq), int(Hq), int(Nk), int(Hkv),
                               bool(causal))
    ws_bytes = rt.backward_workspace_bytes(problem)
    workspace = torch.empty(ws_bytes, dtype=torch.uint8, device=q.device)  # torch's caching allocator
    args = _capi.BackwardArgs()
    args.forward = _capi.ForwardArgs.from_buffer_copy(_pack(dims, q, k, v, o, lse, causal, softmax_scale))
    args.d_o, args.dq, args.dk, args.dv = d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
    for field, t in (("d_o_strides", d_o), ("dq_strides", dq), ("dk_strides", dk), ("dv_strides", dv)):
        setattr(args, field, _capi.Strides3(*t.stride()[:3]))
    args.workspace, args.workspace_bytes = workspace.data_ptr(), ws_bytes
    args.deterministic = int(bool(deterministic))
    device = q.get_device()
    if device == torch.cuda.current_device():
        rt.backward(args, _raw_stream(device))
    else:
        with torch.cuda.device(device):
            rt.backward(args, _raw_stream(device))
    return dq, dk, dv


@torch.library.custom_op("flashtune::attention_backward", mutates_args=())
def _attention_backward_op(d_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                           lse: torch.Tensor, causal: bool, softmax_scale: float, runtime: int,
                           deterministic: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _backward_launch(d_o, q, k, v, o, lse, causal, softmax_scale, runtime, deterministic)


@_attention_backward_op.register_fake
def _(d_o, q, k, v, o, lse, causal, softmax_scale, runtime, deterministic):
    _check(q, k, v)
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_lse(ctx, inputs, output):
    q, k, v, causal, softmax_scale, runtime, *rest = inputs  # deterministic may be left to its default
    deterministic = bool(rest[0]) if rest else False
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.args = (causal, softmax_scale, runtime, deterministic)
    ctx.set_materialize_grads(False)  # an unused lse gets None, not a tensor of zeros


def _backward_lse(ctx, d_o, d_lse):
    if d_lse is not None:
        raise NotImplementedError("flashtune.attention: the backward pass does not propagate a gradient through "
                                  "lse (return_lse=True); use lse without gradient (lse.detach())")
    if d_o is None:
        return None, None, None, None, None, None, None
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashtune.attention_backward(d_o, q, k, v, o, lse, *ctx.args)
    return dq, dk, dv, None, None, None, None


_attention_lse_op.register_autograd(_backward_lse, setup_context=_setup_lse)


# attention writing o into a caller's tensor (out=); returns lse, with no elements unless asked for.
@torch.library.custom_op("flashtune::attention_out", mutates_args=("out",))
def _attention_out_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
                      runtime: int, return_lse: bool, out: torch.Tensor) -> torch.Tensor:
    lse = _launch(q, k, v, causal, softmax_scale, runtime, return_lse, out)[1]
    return q.new_empty((0,), dtype=torch.float32) if lse is None else lse


@_attention_out_op.register_fake
def _(q, k, v, causal, softmax_scale, runtime, return_lse, out):
    _check_out(out, q)
    B, Nq, Hq = _check(q, k, v)[:3]
    return q.new_empty((B, Hq, Nq) if return_lse else (0,), dtype=torch.float32)


def _no_lse_saved(ctx, *grads):
    raise NotImplementedError(
        "torch.ops.flashtune.attention keeps no log-sum-exp, which the backward pass needs: call "
        "flashtune.attention (it routes calls that need gradients through torch.ops.flashtune.attention_lse)")


def _setup_nothing(ctx, inputs, output):
    pass  # nothing to save: backward only raises


_attention_op.register_autograd(_no_lse_saved, setup_context=_setup_nothing)


def _scale(softmax_scale):
    """softmax_scale for the C ABI (0 = its default 1/sqrt(D)); None passes the default."""
    if softmax_scale is None:
        return 0.0
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, numbers.Real):
        raise _runtime.invalid(f"softmax_scale: must be a number (or None for 1/sqrt(head_dim)); got "
                               f"{type(softmax_scale).__name__}")
    s = float(softmax_scale)
    if not (s > 0.0 and math.isfinite(s)):  # the library's rule; 0 would mean its default
        raise _runtime.invalid(f"softmax_scale: {softmax_scale}; allowed: a finite number > 0, or None for "
                               "1/sqrt(head_dim)")
    return s


_flag = _runtime.flag


def _require_tensors(optional=(), **named):
    """Tensor arguments checked by type before anything reads them (the dispatcher's own message
    names a position, not the argument); names in `optional` may be None."""
    for name, t in named.items():
        if not isinstance(t, torch.Tensor) and not (t is None and name in optional):
            raise _runtime.invalid(f"{name}: must be a tensor; got {type(t).__name__}")


def _refuse_grad_with_out(what, q, k, v):
    """The out= ops mutate out, and torch registers no autograd formula for such ops: a call whose
    inputs need gradients is refused up front."""
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise NotImplementedError(f"flashtune.{what}: out= is for inference: the op that writes into out has no "
                                  "backward pass; leave out=None where gradients are needed")


def _direct(q, k, v, *others):
    """Whether a call may skip the dispatcher: _eager_fast's rule for q, k, v, and every other
    tensor argument plain (or None)."""
    return (not torch.compiler.is_compiling() and _eager_fast(q, k, v)
            and all(t is None or type(t) is torch.Tensor for t in others))


def _eager_fast(q, k, v):
    """Whether a call may skip the dispatcher: plain CUDA tensors, no autograd, no tracing, no modes."""
    return (type(q) is torch.Tensor and type(k) is torch.Tensor and type(v) is torch.Tensor and q.is_cuda
            and not (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad))
            and not torch._C._is_torch_function_mode_enabled()
            and torch._C._len_torch_dispatch_stack() == 0)


def attention(q, k, v, causal=False, softmax_scale=None, return_lse=False, *, runtime=None, deterministic=False,
              out=None):
    """Attention on [B, N, H, D] CUDA tensors (see the module docstring); o, or (o, lse).
    runtime: a flashtune.Runtime, None for the default one. deterministic: the backward pass
    (when autograd asks for it) gives bit-identical gradients on every run, at some cost.
    out: a tensor like q to write o into (returned as o); inference only (no gradient)."""
    scale = _scale(softmax_scale)
    causal, return_lse, deterministic = (_flag("causal", causal), _flag("return_lse", return_lse),
                                         _flag("deterministic", deterministic))
    _require_tensors(("out",), q=q, k=k, v=v, out=out)
    if out is not None:
        return _attention_into(q, k, v, causal, scale, return_lse, runtime, out)
    if _direct(q, k, v):
        o, lse = _launch(q, k, v, causal, scale, runtime if runtime is not None else 0, return_lse)
        return (o, lse) if return_lse else o
    rid = 0 if runtime is None else runtime.id
    if return_lse or (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)):
        # The backward pass needs lse: a call that may be differentiated keeps it.
        o, lse = torch.ops.flashtune.attention_lse(q, k, v, causal, scale, rid, deterministic)
        return (o, lse) if return_lse else o
    return torch.ops.flashtune.attention(q, k, v, causal, scale, rid)


def _attention_into(q, k, v, causal, scale, return_lse, runtime, out):
    """attention(..., out=out): o written into out (a tensor: attention() checked)."""
    _refuse_grad_with_out("attention", q, k, v)
    if _direct(q, k, v, out):
        lse = _launch(q, k, v, causal, scale, runtime if runtime is not None else 0, return_lse, out)[1]
    else:
        lse = torch.ops.flashtune.attention_out(q, k, v, causal, scale, 0 if runtime is None else runtime.id,
                                                return_lse, out)
    return (out, lse) if return_lse else out
