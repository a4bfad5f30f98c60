"""The bundled `flashtune` CLI: tune() and `python -m flashtune` run it, so Python reaches the
same tuner, progress bar and database as the command line.

Where the CLI comes from: $FLASHTUNE_CLI (a path, e.g. a build tree's), else the binary the wheel
installs next to this file (bin/flashtune). The CLI execs itself as the tuner's GPU worker.

Thread safety: tune() may be called from any thread; each call is its own process.
"""
import os
import subprocess
import sys

from . import _capi

_HERE = os.path.dirname(os.path.abspath(__file__))
# tune() keywords that are bare flags on the command line (True adds the flag, False omits it).
_FLAGS = {"retune", "dry_run", "compile_only"}


def cli_path():
    """The flashtune CLI this package runs: $FLASHTUNE_CLI, else the package's own copy."""
    path = os.environ.get("FLASHTUNE_CLI") or os.path.join(_HERE, "bin", "flashtune")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):  # a folder passes X_OK
        raise _capi.FlashtuneError(f"the flashtune CLI is not at {path}: install the package (pip install .) "
                                   "or set FLASHTUNE_CLI to a flashtune binary")
    return path


def command_line(command, options):
    """[cli, command, --option value ...] for keyword options: names as the CLI's with '-' for '_';
    lists and tuples comma-joined; bools 1/0 (bare flags for retune, dry_run, compile_only);
    None omitted."""
    argv = [cli_path(), command]
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if key in _FLAGS:
            if not isinstance(value, bool):
                raise _capi.InvalidArgument(f"flashtune.{command}: {key}={value!r}; allowed: True, False")
            if value:
                argv.append(flag)
            continue
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, (list, tuple)):
            value = ",".join(str(int(v) if isinstance(v, bool) else v) for v in value)
        argv += [flag, str(value)]
    return argv


def _environment():
    """The CLI's environment: this one, with the pip package's NVRTC on the library path when this
    process loaded that one (_capi.nvrtc_fallback): the CLI must use the NVRTC the runtime uses,
    since the database keys its winners on the toolchain."""
    env = dict(os.environ)
    try:
        _capi.library()
    except _capi.FlashtuneError:
        pass  # the CLI will say what is missing
    folder = _capi.nvrtc_fallback
    if folder is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (env.get("LD_LIBRARY_PATH"), folder) if p)
    return env


def tune(**options):
    """Runs `flashtune tune` with these options, e.g. tune(dtypes=["bf16"], head_dims=[128],
    causal=True, seqlens_q=[4096], db="tuned.db", strategy="budgeted"). Its output and progress
    bar go to this process's stdout and stderr. Raises FlashtuneError when it fails (exit 2:
    bad options, named in the CLI's message above)."""
    argv = command_line("tune", options)
    rc = subprocess.run(argv, env=_environment()).returncode
    if rc != 0:
        error = _capi.InvalidArgument if rc == 2 else _capi.FlashtuneError
        raise error(f"flashtune tune {'bad usage' if rc == 2 else 'failed'} (exit {rc}); the CLI's message is "
                    f"above: {' '.join(argv[1:])}")


def main(argv=None):
    """`python -m flashtune ARGS` and the `flashtune` script: the CLI with ARGS, in this process."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        path = cli_path()
    except _capi.FlashtuneError as e:
        print(f"flashtune: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(path, [path, *args], _environment())
