"""flashtune: attention kernels generated, compiled and tuned for the GPU in this machine.

    import flashtune
    o = flashtune.attention(q, k, v, causal=True)       # torch CUDA tensors [B, N, H, D]
    print(flashtune.plan(q, k, v, causal=True))          # what was launched, and why
    flashtune.tune(dtypes=["bf16"], head_dims=[128])     # the CLI's tuner, into ./flashtune.db

The package is ctypes over libflashtune's C ABI plus the bundled `flashtune` CLI; nothing in it
is compiled against torch. `import flashtune` needs neither torch nor a GPU; `attention`
imports torch on first use (flashtune/ops.py). Errors are FlashtuneError, bad arguments its
subclass InvalidArgument (also a ValueError), with the library's message naming the argument.

Thread safety: every function may be called from many threads.
"""
from ._capi import FlashtuneError, InvalidArgument, library_path
from ._cli import cli_path, main, tune
from ._runtime import Plan, Problem, Runtime, default_runtime, plan

__all__ = ["attention", "plan", "tune", "Runtime", "Problem", "Plan", "FlashtuneError", "InvalidArgument",
           "default_runtime", "version", "library_path", "cli_path", "main"]


def version():
    """The library's version (ft_version), e.g. "0.1.0"."""
    from . import _capi
    return _capi.library().ft_version().decode()


def __getattr__(name):
    # attention and __version__ load torch / the library only when first asked for (PEP 562).
    if name == "attention":
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise ImportError(f"flashtune.attention needs PyTorch ({e}); install torch, or use "
                              "flashtune.plan / flashtune.Runtime, which do not") from None
        from .ops import attention
        globals()["attention"] = attention
        return attention
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'flashtune' has no attribute {name!r}")
