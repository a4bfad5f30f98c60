#!/usr/bin/env bash
# Session 36, call 6: hopper_paged with the blocks split over the producer's loading warps by
# stage (F: warps 0, 2, 3 at three stages, 0 and 2 at two; each loads K and V of its stages'
# blocks, warp 0 every tile's Q) against the shipped split (E, 3cb76c6: K and Q from warp 0, V
# from warp 2). (1) F's correctness: CachePrefillGpu and the runtime's paged tests. (2)
# `flashtune bench --layout paged` of F and E in turn, twice (call 2's tiles and shapes), and a
# dense persistent tile of each (the only dense SASS that moved: hopper_fwd d256 128x80 p1's
# producer). (3) compute-sanitizer racecheck and synccheck of bf16 d64 causal (two loading
# warps), racecheck of d128 causal (three).
# usage (GPU): PACK=.devcarry-NAME OUT=$OUT bash bench/data/h100-2026-12-06-s36/call6.sh
#   (PACK: build F; PACK/E/flashtune: build E)
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
: > "$OUT/bench.txt"
run() {  # build layout d mask shape tiles...
  local b=$1 layout=$2 d=$3 mask=$4 shape=$5; shift 5
  local lib=$P; [ $b != F ] && lib=$P/$b
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
  for b in F E; do
    run $b paged 128 full "4 512 4096" $T128
    run $b paged 128 causal "4 512 4096" $T128
    run $b paged 128 full "1 2048 8192" $T128
    run $b paged 64 full "4 512 4096" $T64
    run $b paged 256 full "4 512 4096" $T256
  done
done
run F dense 256 full "4 512 4096" bm128_bn64_wg2_s2_p1_pp1_ov1
run E dense 256 full "4 512 4096" bm128_bn64_wg2_s2_p1_pp1_ov1
for cls in 1 3; do
  for tool in racecheck $([ $cls = 1 ] && echo synccheck); do
    LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64 FLASHTUNE_CACHE_DIR=/tmp/ft-cache-san timeout 60 \
      compute-sanitizer --tool $tool --error-exitcode 3 $P/flashtune_gpu_tests \
      --gtest_filter=CachePrefillGpu/CachePrefillClasses.VariantsMatchTheReference/$cls > "$OUT/$tool-$cls.log" 2>&1
    echo "$tool CachePrefill/$cls: exit $? at $(( $(date +%s) - t0 )) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool-$cls.log" | tail -1)" >> "$OUT/summary.txt"
  done
done
python3 - "$OUT/bench.txt" > "$OUT/table.txt" <<'PY'
import collections, re, statistics, sys
cur = None; t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"== (\w) (\w+) (d\d+) (\w+) (B\d+ Nq\d+ Nk\d+)", line)
    if m: cur = m.groups(); continue
    m = re.match(r"hopper_(?:paged|fwd)_bf16_d\d+_(\S+?)_(?:full|causal)\s+ok\s+([\d.]+)", line)
    if m and cur:
        b, layout, d, mask, shape = cur
        t[(d, mask, shape, m.group(1))].append((b if layout == "paged" else "dense" if b == "E" else "F dense", float(m.group(2))))
print("shape | tile | E us | F/E | dense/E   (medians of the passes' medians)")
for k, v in t.items():
    by = collections.defaultdict(list)
    for b, us in v: by[b].append(us)
    med = {b: statistics.median(x) for b, x in by.items()}
    a = med.get("E")
    if not a: continue
    f = lambda b: f"{med[b] / a:.3f}" if b in med else "-"
    print(f"{k[0]} {k[1]} {k[2]} | {k[3]} | {a:.1f} | {f('F')} | {f('dense')}   raw {dict(by)}")
d = {k: v for k, v in t.items() if any(b == "F dense" for b, _ in v)}
for k, v in d.items():
    by = collections.defaultdict(list)
    for b, us in v: by[b].append(us)
    print(f"dense {k[0]} {k[1]} {k[2]} | {k[3]} | F/E {statistics.median(by['F dense']) / statistics.median(by['dense']):.3f}   raw {dict(by)}")
PY
cat "$OUT/summary.txt"
cut -c1-110 "$OUT/table.txt"
bash bench/pack_out.sh "$OUT" summary.txt table.txt bench.txt tests.txt gpu.txt > /dev/null
