#!/usr/bin/env bash
# A/B of two builds' prefill kernels (or, OPERATION=bwd, their backward kernels) by `flashtune
# bench` (queued launches, checked against the reference, ROUNDS interleaved rounds a run): each
# pass runs every shape on the old build, then on the new one, so drift between passes shows; the
# summary (bench/bench_ab_summary.py: new / old of the mean medians per shape, head dim + mask and
# tile) is printed last.
# usage: bench/forward_tile_ab.sh LOG OLD_PACK NEW_PACK "DTYPE D CAUSAL B N H VARIANT[,VARIANT...]" ...
#   PACK: a bench/pack_for_gpu.sh folder named .devcarry-NAME (NAME labels it in LOG); each
#   further argument is one shape (Nq = Nk = N, Hq = Hkv = H) and the variants timed on it, or,
#   for other shapes and K/V layouts, "DTYPE D CAUSAL B NQ NK HQ HKV LAYOUT VARIANT[,...]"
#   (LAYOUT: `flashtune bench --layout`, e.g. paged: 16-key shuffled pages).
#   env: PASSES (2), ROUNDS (5), FLASHTUNE_CACHE_DIR, OPERATION (fwd; bwd times the backward
#   kernels of the shapes, `flashtune bench --operation bwd`).
set -uo pipefail
LOG=${1:?usage: forward_tile_ab.sh LOG OLD_PACK NEW_PACK SHAPE...}
OLD=${2:?} NEW=${3:?}
shift 3
(( $# > 0 )) || { echo "forward_tile_ab.sh: no shape given" >&2; exit 2; }
shapes=("$@")  # kept: `set --` below takes the positional parameters for one shape's fields
ROOT=$(cd "$(dirname "$0")/.." && pwd)
name() { basename "$1" | sed 's/^\.devcarry-//'; }
for pass in $(seq 1 "${PASSES:-2}"); do
  for C in "$OLD" "$NEW"; do
    for shape in "${shapes[@]}"; do
      set -- $shape
      if (( $# == 7 )); then
        label="d$2c$3" keys=$5 variants=$7
        args=(--dtype "$1" --head-dim "$2" --causal "$3" --batch "$4" --seqlen-q "$5" --heads-q "$6")
      elif (( $# == 10 )); then
        label="d$2c$3$([ "$9" = dense ] || echo "$9")" keys=$6 variants=${10}
        args=(--dtype "$1" --head-dim "$2" --causal "$3" --batch "$4" --seqlen-q "$5" --seqlen-k "$6"
              --heads-q "$7" --heads-kv "$8" --layout "$9")
      else
        echo "forward_tile_ab.sh: a shape has 7 or 10 fields, not $#: $shape" >&2; exit 2
      fi
      echo "== pass $pass $(name "$C") B$4 x $keys $label" >> "$LOG"  # bench_ab_summary.py's header
      LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64 FLASHTUNE_WORKER=$C/flashtune timeout 60 "$C/flashtune" bench \
        "${args[@]}" --operation "${OPERATION:-fwd}" --variant "$variants" --rounds "${ROUNDS:-5}" >> "$LOG" 2>&1
    done
  done
done
python3 "$ROOT/bench/bench_ab_summary.py" "$LOG" "$(name "$OLD")" "$(name "$NEW")"
