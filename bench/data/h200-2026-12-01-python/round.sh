#!/usr/bin/env bash
# GPU round for the Python package (issue 16): installs the carried wheel into /tmp/site (no network
# there), runs bench/python_op.py and examples/python/sdpa_swap.py --compile; logs to $OUT.
set -uo pipefail
C=$(cd "$1" && pwd)
export PYTHONUNBUFFERED=1
cd /tmp
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$C"/flashtune-*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site
export FLASHTUNE_CACHE_DIR=/tmp/ftcache FLASHTUNE_DB=/tmp/none.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
if ! python3 -c "import flashtune; print('flashtune', flashtune.version(), flashtune.library_path())" 2>&1 | tee $OUT/load.log; then
  echo "wheel does not load as installed; retrying with LD_LIBRARY_PATH=/usr/local/cuda/lib64"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
fi
python3 -c "import flashtune; print('flashtune', flashtune.version())" || exit 1
timeout 60 python3 "$C/ops_test.py" > "$OUT/ops_test.log" 2>&1; echo "ops_test.py exit $?"; tail -1 "$OUT/ops_test.log"
timeout ${OP_S:-150} python3 "$C/python_op.py" --out "$OUT" --deadline-s ${DEADLINE_S:-105} > "$OUT/python_op.log" 2>&1
echo "python_op.py exit $?"
timeout 40 python3 "$C/sdpa_swap.py" > "$OUT/sdpa_swap.log" 2>&1
echo "sdpa_swap.py exit $?"
tail -4 "$OUT/sdpa_swap.log"
sed -n '/== summary ==/,$p' "$OUT/python_op.log"
