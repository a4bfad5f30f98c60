#!/usr/bin/env bash
# Session 23, call 9: s23e = 7c3b3c5 (call 8's grouped paged copies, the group address formed at its first
# chunk and stepped by rows: fewer live registers) against s23c = dad9fdc (the shipped
# kernels). The decode and varlen decode GPU tests on s23e (a process each: 16-, 256- and 1-key
# pages, float64 reference); decode_bench.py on s23e with s23c as the baseline on the same inputs
# (untuned, dense and paged 16 / 256, new / old time); `flashtune bench` of each build in turn on
# the short-cache tiles (two passes, three rounds), paged 16 and dense.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call9.sh
set -uo pipefail
W=/tmp/call9
mkdir -p $W
OUT=$W FILTER='DecodeGpu*:VarlenGpu/VarlenDecodeClasses.*' SUITE_S=120 JOBS=2 bash bench/gpu_suite.sh .devcarry-s23e \
  > $W/suite-stdout.txt 2>&1
echo "suite exit $?"; tail -3 $W/suite-stdout.txt
STEPS="bench" BASELINE=.devcarry-s23c/libflashtune.so BENCH_S=120 OUT=$W bash bench/decode_round.sh .devcarry-s23e | \
  grep -E "^\||streaming|exit"
export FLASHTUNE_CACHE_DIR=/tmp/ft-cache8
V=decode_fwd_bf16_d128_; F=_full
list=${V}bn32_rm1_w2_s4_cs2$F,${V}bn32_rm1_w2_s2_cs4$F,${V}bn64_rm1_w4_s3_cs4$F,${V}bn64_rm1_w4_s3_cs2$F
for pass in 1 2; do
  for build in s23c s23e; do
    C=.devcarry-$build
    for shape in "1 2048" "1 8192" "8 2048" "8 32768"; do
      set -- $shape
      for layout in paged dense; do
        echo "== pass $pass $build B$1 x $2 $layout" >> $W/bench.txt
        LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune timeout 60 $C/flashtune bench --batch $1 \
          --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 --layout $layout --variant "$list" --rounds 3 \
          >> $W/bench.txt 2>&1
      done
    done
  done
done
python3 - $W/bench.txt <<'PY'
import re, sys, collections
t = collections.defaultdict(list)
key = None
for line in open(sys.argv[1]):
    m = re.match(r"== pass (\d) (\S+) (B\d+ x \d+) (\S+)", line)
    if m: key = m.groups(); continue
    m = re.match(r"(decode_fwd\S+)\s+ok\s+([\d.]+)", line)
    if m and key: t[(key[2], key[3], m.group(1), key[1])].append(float(m.group(2)))
print("shape layout variant: s23c us / s23e us (mean of the two passes), new/old")
for s, l, v in sorted({(s, l, v) for s, l, v, b in t}):
    a, b = t.get((s, l, v, "s23c"), []), t.get((s, l, v, "s23e"), [])
    if a and b:
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{s} {l:5s} {v[20:-5]:18s} {ma:8.2f} {mb:8.2f}  {mb / ma:.3f}")
PY
cp $W/suite-stdout.txt $W/decode_table.md $W/decode_bench.log $W/bench.txt $OUT/
