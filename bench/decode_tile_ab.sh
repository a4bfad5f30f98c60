#!/usr/bin/env bash
# A/B of two builds' decode kernels by `flashtune bench` (checked against the reference, three
# interleaved rounds a run): each pass runs every shape and layout on the old build, then on the new
# one, so drift between passes shows; the summary (bench/bench_ab_summary.py: new / old of the mean
# medians per shape, layout and tile) is printed last. Hq 32, Hkv 8, one query token.
# usage: bench/decode_tile_ab.sh LOG OLD_PACK NEW_PACK "TILES" ["B NK,B NK,..."] ["paged dense"]
#   PACK: a bench/pack_for_gpu.sh folder named .devcarry-NAME (NAME labels it in LOG); TILES: URI
#   middles such as bn32_rm1_w2_s4_cs2 (bf16 d128; the layout's kv0 / kv1 is added); shapes default
#   "1 2048,1 8192,8 2048,8 32768,64 8192". env: PASSES (2), ROUNDS (3), FLASHTUNE_CACHE_DIR.
set -uo pipefail
LOG=${1:?usage: decode_tile_ab.sh LOG OLD_PACK NEW_PACK TILES [SHAPES] [LAYOUTS]}
OLD=${2:?} NEW=${3:?} TILES=${4:?}
SHAPES=${5:-1 2048,1 8192,8 2048,8 32768,64 8192}
LAYOUTS=${6:-paged dense}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
name() { basename "$1" | sed 's/^\.devcarry-//'; }
list() {  # the tiles' URIs for layout $1
  local out="" t k=kv0
  [ "$1" = paged ] && k=kv1
  for t in $TILES; do out+="decode_fwd_bf16_d128_${t}_${k}_full,"; done
  echo "${out%,}"
}
IFS=',' read -r -a shapes <<< "$SHAPES"
for pass in $(seq 1 "${PASSES:-2}"); do
  for C in "$OLD" "$NEW"; do
    for shape in "${shapes[@]}"; do
      set -- $shape
      for layout in $LAYOUTS; do
        echo "== pass $pass $(name "$C") B$1 x $2 $layout" >> "$LOG"
        LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune timeout 60 "$C/flashtune" bench \
          --batch "$1" --seqlen-q 1 --seqlen-k "$2" --heads-q 32 --heads-kv 8 --layout "$layout" \
          --variant "$(list "$layout")" --rounds "${ROUNDS:-3}" >> "$LOG" 2>&1
      done
    done
  done
done
python3 "$ROOT/bench/bench_ab_summary.py" "$LOG" "$(name "$OLD")" "$(name "$NEW")"
