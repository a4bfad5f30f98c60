#!/usr/bin/env bash
# Session 24, call 1: s24a = f00042b (decode_fwd compiled per K/V layout: kv0 dense kernels carry no
# page code, kv1 paged kernels copy pages of 16+ keys by 16-row groups) against s24o = a89946c (one
# kernel for both layouts). The decode, varlen decode, paged-tune and runtime GPU tests on s24a,
# a process each (float64 reference; 16-, 256- and 1-key pages); decode_bench.py on s24a with
# s24o as the baseline on the same inputs (untuned default bn64 s3 cs2, dense and paged 16 / 256,
# new / old time); `flashtune bench` of each build in turn on the short-cache tiles (two passes,
# three rounds), paged 16 and dense: old URIs have no kv, new ones kv0 (dense) / kv1 (paged).
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s24/call1.sh
set -uo pipefail
W=/tmp/call1
mkdir -p $W
OUT=$W FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*:TuneGpu.PagedDecode*:RuntimeGpu.*' SUITE_S=170 JOBS=2 \
  bash bench/gpu_suite.sh .devcarry-s24a > $W/suite-stdout.txt 2>&1
echo "suite exit $?"; tail -4 $W/suite-stdout.txt
STEPS="bench" BASELINE=.devcarry-s24o/libflashtune.so BENCH_S=120 OUT=$W bash bench/decode_round.sh .devcarry-s24a | \
  grep -E "^\||streaming|exit"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache1
V=decode_fwd_bf16_d128_
tiles="bn32_rm1_w2_s4_cs2 bn32_rm1_w2_s2_cs4 bn64_rm1_w4_s3_cs4 bn64_rm1_w4_s3_cs2"
list() {  # build layout -> the tiles' URIs in that build
  local out="" t
  for t in $tiles; do
    if [ $1 = s24o ]; then out+="${V}${t}_full,"; elif [ $2 = paged ]; then out+="${V}${t}_kv1_full,"; else out+="${V}${t}_kv0_full,"; fi
  done
  echo ${out%,}
}
for pass in 1 2; do
  for build in s24o s24a; do
    C=.devcarry-$build
    for shape in "1 2048" "1 8192" "8 2048" "8 32768"; do
      set -- $shape
      for layout in paged dense; do
        echo "== pass $pass $build B$1 x $2 $layout" >> $W/bench.txt
        LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune timeout 60 $C/flashtune bench --batch $1 \
          --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 --layout $layout --variant "$(list $build $layout)" --rounds 3 \
          >> $W/bench.txt 2>&1
      done
    done
  done
done
cp $W/suite-stdout.txt $W/decode_table.md $W/decode_bench.log $W/bench.txt $OUT/
python3 - $W/bench.txt <<'PY'
import re, sys, collections
t = collections.defaultdict(list)
key = None
for line in open(sys.argv[1]):
    m = re.match(r"== pass (\d) (\S+) (B\d+ x \d+) (\S+)", line)
    if m: key = m.groups(); continue
    m = re.match(r"decode_fwd_bf16_d128_(bn\S+?)(_kv\d)?_full\s+ok\s+([\d.]+)", line)
    if m and key: t[(key[2], key[3], m.group(1), key[1])].append(float(m.group(3)))
print("shape layout tile: s24o us / s24a us (mean of the two passes), new/old")
for s, l, v in sorted({(s, l, v) for s, l, v, b in t}):
    a, b = t.get((s, l, v, "s24o"), []), t.get((s, l, v, "s24a"), [])
    if a and b:
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{s} {l:5s} {v:18s} {ma:8.2f} {mb:8.2f}  {mb / ma:.3f}")
PY
