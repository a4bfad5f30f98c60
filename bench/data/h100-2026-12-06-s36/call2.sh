#!/usr/bin/env bash
# Session 36, call 2: hopper_paged's producer on small pages. Call 1's ncu found the consumers
# waiting on K/V "full" barriers and the producer almost never waiting on "empty" ones: on
# 16-key pages the producer (one warp issuing 32 boxes a block, one lane at a time, after a
# table read whose latency every block paid) runs behind. Three builds of the same kernels:
#   A (PACK/A): the session's start; B (PACK/B): page-table entries read a block ahead;
#   D (PACK itself): B plus V loaded by a second producer warp (K and Q by the first).
# (1) Correctness of D: CachePrefillGpu (12 classes, 16/32/256-key pages, dense caches with
# lengths, NaN past the keys) and the runtime's paged tests; memcheck, racecheck and synccheck
# of bf16 d128 causal. (2) `flashtune bench --layout paged` (16-key shuffled pages, tiles
# interleaved in a process, 3 rounds) of each build in turn, A B D, twice; the same tiles dense
# (hopper_fwd, unchanged) once as the reference.
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call2.sh
set -uo pipefail
t0=$(date +%s)
P=$(cd "${PACK:?PACK=.devcarry-NAME}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$OUT/gpu.txt"
: > "$OUT/summary.txt"
mkdir -p "$OUT/t"
OUT=$OUT/t FILTER='CachePrefillGpu*:RuntimeGpu.Paged*:RuntimeGpu.*Cache*' SUITE_S=150 JOBS=4 TEST_S=120 \
  bash bench/gpu_suite.sh "$P" > "$OUT/tests.txt" 2>&1
echo "tests: exit $? at $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/tests.txt")" >> "$OUT/summary.txt"
grep -h '^FAIL\|Failure' -A3 "$OUT"/t/gpu_suite.log 2>/dev/null | head -30 >> "$OUT/summary.txt"
for tool in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-san timeout 150 \
    compute-sanitizer --tool $tool --error-exitcode 3 $P/flashtune_gpu_tests \
    --gtest_filter='CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/3' > "$OUT/$tool.log" 2>&1
  echo "$tool CachePrefill/3: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$OUT/summary.txt"
done
: > "$OUT/bench.txt"
run() {  # build layout d mask shape tiles...
  local b=$1 layout=$2 d=$3 mask=$4 shape=$5; shift 5
  local lib=$P; [ $b != D ] && lib=$P/$b
  local fam=$([ $layout = paged ] && echo hopper_paged || echo hopper_fwd)
  local c=$([ $mask = causal ] && echo 1 || echo 0) list=""
  for t in "$@"; do list="$list,${fam}_bf16_d${d}_${t}_${mask}"; done
  set -- $shape
  echo "== $b $layout d$d $mask B$1 Nq$2 Nk$3" >> "$OUT/bench.txt"
  LD_LIBRARY_PATH=$lib:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-$b timeout 100 $lib/flashtune bench \
    --dtype bf16 --head-dim $d --batch $1 --seqlen-q $2 --seqlen-k $3 --heads-q 32 --heads-kv 8 --causal $c \
    --layout $layout --rounds 3 --reps 30 --variant "${list#,}" >> "$OUT/bench.txt" 2>&1
  echo "$b $layout d$d $mask B$1 Nq$2 Nk$3: exit $? at $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
}
T128="bm128_bn128_wg2_s3_p0_pp1_ov1 bm192_bn80_wg3_s3_p0_pp1_ov1 bm128_bn128_wg2_s2_p2_pp1_ov1"
T64="bm192_bn128_wg3_s2_p0_pp1_ov1 bm192_bn128_wg3_s2_p2_pp1_ov1"
T256="bm128_bn80_wg2_s2_p0_pp1_ov1 bm128_bn64_wg2_s2_p1_pp1_ov1"
for pass in 1 2; do
  for b in A B D; do
    run $b paged 128 full "4 512 4096" $T128
    run $b paged 128 causal "4 512 4096" $T128
    run $b paged 128 full "1 2048 8192" $T128
    run $b paged 64 full "4 512 4096" $T64
    run $b paged 256 full "4 512 4096" $T256
  done
done
run A dense 128 full "4 512 4096" $T128
run A dense 128 causal "4 512 4096" $T128
run A dense 64 full "4 512 4096" $T64
run A dense 256 full "4 512 4096" $T256
python3 - "$OUT/bench.txt" > "$OUT/table.txt" <<'PY'
import collections, re, statistics, sys
cur = None; t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"== (\w) (\w+) (d\d+) (\w+) (B\d+ Nq\d+ Nk\d+)", line)
    if m: cur = m.groups(); continue
    m = re.match(r"hopper_(?:paged|fwd)_bf16_d\d+_(\S+?)_(?:full|causal)\s+ok\s+([\d.]+)", line)
    if m and cur:
        b, layout, d, mask, shape = cur
        t[(d, mask, shape, m.group(1))].append((b if layout == "paged" else "dense", float(m.group(2))))
print("shape | tile | A us | B/A | D/A | dense/A   (medians of the passes' medians)")
for k, v in t.items():
    by = collections.defaultdict(list)
    for b, us in v: by[b].append(us)
    med = {b: statistics.median(x) for b, x in by.items()}
    a = med.get("A")
    if not a: continue
    f = lambda b: f"{med[b] / a:.3f}" if b in med else "-"
    print(f"{k[0]} {k[1]} {k[2]} | {k[3]} | {a:.1f} | {f('B')} | {f('D')} | {f('dense')}   raw {dict(by)}")
PY
cat "$OUT/summary.txt"
cut -c1-110 "$OUT/table.txt"
bash bench/pack_out.sh "$OUT" summary.txt table.txt bench.txt tests.txt gpu.txt > /dev/null
