#!/usr/bin/env bash
# Second GPU round for the Python package: examples/python/sdpa_swap.py --compile, and
# compute-sanitizer memcheck over flashtune.attention on strided views (packed qkv, K/V expanded
# over heads, Nq != Nk causal, GQA). Logs to $OUT.
set -uo pipefail
C=$(cd "$1" && pwd)
export PYTHONUNBUFFERED=1
cd /tmp
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$C"/flashtune-*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site FLASHTUNE_CACHE_DIR=/tmp/ftcache FLASHTUNE_DB=/tmp/none.db
timeout 70 python3 "$C/sdpa_swap.py" --compile > "$OUT/sdpa_swap_compile.log" 2>&1
echo "sdpa_swap.py --compile exit $?"; tail -3 "$OUT/sdpa_swap_compile.log"
cat > /tmp/views.py <<'PY'
import torch, flashtune
d = dict(device="cuda", dtype=torch.bfloat16)
qkv = torch.randn(2, 300, 3, 8, 64, **d)
o1 = flashtune.attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)
k1 = torch.randn(2, 500, 1, 128, **d)
o2 = flashtune.attention(torch.randn(2, 200, 8, 128, **d), k1.expand(2, 500, 8, 128), k1.expand(2, 500, 8, 128), causal=True)
o3, lse = flashtune.attention(torch.randn(1, 77, 16, 128, **d), torch.randn(1, 900, 4, 128, **d),
                              torch.randn(1, 900, 4, 128, **d).transpose(1, 2).contiguous().transpose(1, 2),
                              causal=True, return_lse=True)
torch.cuda.synchronize()
print("views ok", float(o1.float().abs().sum()), float(o2.float().abs().sum()), float(o3.float().abs().sum()))
PY
timeout 100 compute-sanitizer --tool memcheck --leak-check no python3 /tmp/views.py > "$OUT/sanitizer.log" 2>&1
echo "compute-sanitizer memcheck exit $?"; tail -4 "$OUT/sanitizer.log"
