"""flashtune: attention kernels generated, compiled and tuned for the GPU in this machine.

    import flashtune
    o = flashtune.attention(q, k, v, causal=True)       # torch CUDA tensors [B, N, H, D]
    o = flashtune.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k)   # packed sequences
    o = flashtune.attention_with_kvcache(q, k_cache, v_cache, lens, block_table)   # decode, paged
    print(flashtune.plan(q, k, v, causal=True))          # what was launched, and why
    print(flashtune.plan_with_kvcache(q, k_cache, v_cache, lens, block_table))   # the same for decode
    flashtune.tune(dtypes=["bf16"], head_dims=[128])     # the CLI's tuner, into ./flashtune.db

The package is ctypes over libflashtune's C ABI plus the bundled `flashtune` CLI; nothing in it
is compiled against torch. `import flashtune` needs neither torch nor a GPU; `attention`
(flashtune/ops.py), `attention_varlen` and `attention_with_kvcache` (flashtune/layouts.py) import
torch on first use. Errors are FlashtuneError, bad arguments its subclass InvalidArgument (also
a ValueError), with the library's message naming the argument.

Thread safety: every function may be called from many threads.
"""
import importlib

from ._capi import FlashtuneError, InvalidArgument, library_path
from ._cli import cli_path, main, tune
from ._runtime import Plan, Problem, Runtime, default_runtime, plan

__all__ = ["attention", "attention_varlen", "attention_with_kvcache", "plan", "plan_varlen", "plan_with_kvcache", "tune", "Runtime", "Problem", "Plan",
           "FlashtuneError", "InvalidArgument", "default_runtime", "version", "library_path", "cli_path", "main"]


def version():
    """The library's version (ft_version), e.g. "0.1.0"."""
    from . import _capi
    return _capi.library().ft_version().decode()


# The calls that need torch, and their modules (imported on first use).
_TORCH_CALLS = {"attention": ".ops", "attention_varlen": ".layouts", "attention_with_kvcache": ".layouts",
                "plan_varlen": ".layouts", "plan_with_kvcache": ".layouts"}


def __getattr__(name):
    # The torch calls and __version__ load torch / the library only when first asked for (PEP 562).
    if name in _TORCH_CALLS:
        try:
            importlib.import_module("torch")
        except ImportError as e:
            raise ImportError(f"flashtune.{name} needs PyTorch ({e}); install torch, or use "
                              "flashtune.plan / flashtune.Runtime, which do not") from None
        fn = getattr(importlib.import_module(_TORCH_CALLS[name], __name__), name)
        globals()[name] = fn
        return fn
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'flashtune' has no attribute {name!r}")
