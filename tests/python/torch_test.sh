#!/usr/bin/env bash
# The package's PyTorch half without a GPU: installs torch from PyPI into a virtual environment
# (version $FLASHTUNE_TEST_TORCH, default 2.15.0; kept in WORK_DIR between runs, about a minute
# the first time) and runs the torch tests there
# against the build tree's library: ops_test.py (flashtune.attention), layouts_test.py
# (attention_varlen / attention_with_kvcache) and layouts_gpu_test.py (which skips, saying why,
# where there is no GPU).
#
# usage: torch_test.sh PYTHON3 SOURCE_DIR LIBFLASHTUNE WORK_DIR
# Exit 77 (skipped) when this Python has no venv module or pip cannot fetch torch.
set -uo pipefail
PY=$1 SRC=$2 LIB=$3 WORK=$4
VPY=$WORK/venv/bin/python
TORCH=${FLASHTUNE_TEST_TORCH:-2.15.0}
mkdir -p "$WORK"
if ! "$VPY" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH')" > /dev/null 2>&1; then
  rm -rf "$WORK/venv"
  if ! "$PY" -m venv "$WORK/venv" > "$WORK/venv.log" 2>&1; then
    cat "$WORK/venv.log"
    echo "SKIP: $PY cannot create a virtual environment (Debian: apt-get install python3-venv)"
    exit 77
  fi
  start=$(date +%s)
  # Pinned, so that CI tests this change and not the newest torch release (README: torch >= 2.4).
  if ! "$VPY" -m pip install -q "torch==$TORCH" > "$WORK/torch.log" 2>&1; then
    tail -5 "$WORK/torch.log"
    echo "SKIP: pip could not install torch (no network to PyPI?)"
    exit 77
  fi
  echo "installed torch $("$VPY" -c 'import torch; print(torch.__version__)') in $(( $(date +%s) - start )) s"
fi
rc=0
for test in ops_test.py layouts_test.py layouts_gpu_test.py; do
  echo "== $test"
  (cd "$WORK" && env -u FLASHTUNE_CLI FLASHTUNE_LIB="$LIB" PYTHONPATH="$SRC/python" \
    FLASHTUNE_DB="$WORK/absent.db" "$VPY" "$SRC/tests/python/$test" -v) || rc=1
done
exit $rc
