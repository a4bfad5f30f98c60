#!/usr/bin/env bash
# Session 23, call 5: call 4's A/B (s23b: the prologue's page-table reads in one round trip,
# f5fc02e, against s23a = 41e5881) was untuned: the default bn64 s3 leaves a block one step at
# short caches, so its prologue waited for one table read in both builds. Here the tiles the tune
# picks at short caches, whose blocks have two or more steps (bn32 s4: two steps a block at
# B1 x 2k), through `flashtune bench` of each build in turn (two passes, three rounds each),
# paged (16-key pages) and dense.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call5.sh
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} FLASHTUNE_CACHE_DIR=/tmp/ft-cache
V=decode_fwd_bf16_d128_; F=_full
list=${V}bn32_rm1_w2_s4_cs2$F,${V}bn32_rm1_w2_s4_cs4$F,${V}bn32_rm1_w2_s2_cs4$F,${V}bn64_rm1_w4_s3_cs4$F
for pass in 1 2; do
  for build in s23a s23b; do
    C=.devcarry-$build
    for shape in "1 2048" "1 8192" "8 2048"; do
      set -- $shape
      for layout in paged dense; do
        echo "== pass $pass $build B$1 x $2 $layout" >> $OUT/call5-bench.txt
        LD_LIBRARY_PATH=$C:$LD_LIBRARY_PATH FLASHTUNE_WORKER=$C/flashtune timeout 60 $C/flashtune bench --batch $1 \
          --seqlen-q 1 --seqlen-k $2 --heads-q 32 --heads-kv 8 --layout $layout --variant "$list" --rounds 3 \
          >> $OUT/call5-bench.txt 2>&1
      done
    done
  done
done
python3 - $OUT/call5-bench.txt <<'PY'
import re, sys, collections
t = collections.defaultdict(list)
key = None
for line in open(sys.argv[1]):
    m = re.match(r"== pass (\d) (\S+) (B\d+ x \d+) (\S+)", line)
    if m: key = m.groups(); continue
    m = re.match(r"(decode_fwd\S+)\s+ok\s+([\d.]+)", line)
    if m and key: t[(key[2], key[3], m.group(1), key[1])].append(float(m.group(2)))
rows = sorted({(s, l, v) for s, l, v, b in t})
print("shape layout variant: s23a us / s23b us (mean of the two passes), new/old")
for s, l, v in rows:
    a, b = t.get((s, l, v, "s23a"), []), t.get((s, l, v, "s23b"), [])
    if a and b:
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{s} {l:5s} {v[20:-5]:18s} {ma:8.2f} {mb:8.2f}  {mb / ma:.3f}")
PY
