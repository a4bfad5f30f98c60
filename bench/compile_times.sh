#!/usr/bin/env bash
# Per-variant NVRTC compile time of a family's default space (issue 13: <= 2 s per variant on
# the 2-core development machine). Generates each variant's source with the CLI, compiles it
# with `flashtune compile --no-cache --option=--minimal` (NVRTC + ptxas with the library's options,
# one process per variant, one at a time) REPEAT times and prints, for the run with the least CPU
# time, "cpu_s wall_s fe_ms nvvm_ms ptxas_ms load registers spill URI": CPU (user + sys) and wall
# seconds of the compiling process, NVRTC's own phase split (its --time option, which leaves the
# cubin's bytes unchanged: C++ front end, NVVM optimizer, ptxas, in ms) and the 1-minute load
# average when that run started. Then the slowest, the phase shares and the load.
# The machine is shared: CPU time on it rises with the load (a d128 variant: 0.8 s at load 0-4,
# 2-3.5 s at load 8-10), so a time only means something next to the load it ran under.
# usage: bench/compile_times.sh [CLI] [FAMILY] [ARCH] [DTYPES] [HEAD_DIMS]
#        defaults: build/flashtune hopper_fwd sm_90a "bf16" "64 128 256"
# env:   REPEAT (default 2): compiles per variant, the least CPU time kept
set -uo pipefail
CLI=${1:-build/flashtune}
FAMILY=${2:-hopper_fwd}
ARCH=${3:-sm_90a}
DTYPES=${4:-bf16}
DIMS=${5:-64 128 256}
REPEAT=${REPEAT:-2}
OPERATION=fwd
case $FAMILY in *_bwd) OPERATION=bwd ;; esac  # the backward families' spaces are listed apart
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; $REPEAT run(s) per variant, least CPU kept"
printf '# cpu_s\twall_s\tfe_ms\tnvvm_ms\tptxas_ms\tload\tregisters\t\tspill\turi\n'
for dt in $DTYPES; do
  for d in $DIMS; do
    for c in 0 1; do
      for uri in $("$CLI" generate --dtype "$dt" --head-dim "$d" --causal $c --operation $OPERATION --arch "$ARCH" 2>/dev/null | grep "^$FAMILY"); do
        "$CLI" generate --variant "$uri" -o "$tmp/k.cu" || exit 1
        best=""
        for ((r = 0; r < REPEAT; ++r)); do
          load=$(cut -d' ' -f1 /proc/loadavg)
          rm -f "$tmp/t.csv"
          # --minimal: as the library compiles generated sources (GeneratedSourceRequest, flashtune/compiler.h)
          { TIMEFORMAT='%R %U %S'; time "$CLI" compile "$tmp/k.cu" --arch "$ARCH" --no-cache --option=--minimal \
              --option=--time="$tmp/t.csv" > "$tmp/report" 2>&1; } 2> "$tmp/time" \
            || { echo "FAIL $uri"; cat "$tmp/report"; continue 2; }
          read -r wall user sys < "$tmp/time"
          cpu=$(echo "$user + $sys" | bc)
          [ -n "$best" ] && (( $(echo "$cpu >= $best" | bc) )) && continue
          best=$cpu
          fe=$(awk -F', ' '/Frontend/ {print $3}' "$tmp/t.csv")
          nvvm=$(awk -F', ' '/NVVM Optimizer/ {print $3}' "$tmp/t.csv")
          ptx=$(awk -F', ' '/PTX Translation/ {print $3}' "$tmp/t.csv")
          regs=$(grep -o 'registers[^,]*' "$tmp/report" | head -n 1)
          spill=$(grep -o '[0-9]* bytes spill stores' "$tmp/report" | head -n 1)
          row=$(printf '%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$cpu" "$wall" "$fe" "$nvvm" "$ptx" "$load" "$regs" "$spill" "$uri")
        done
        echo "$row"
      done
    done
  done
done | tee "$tmp/all"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# slowest:"; sort -rn "$tmp/all" | head -n 5
awk -F'\t' '$1 ~ /^[0-9.]+$/ { fe += $3; nvvm += $4; ptx += $5 }
  END { t = fe + nvvm + ptx; if (t > 0) printf "# NVRTC phases over all variants: front end %.0f%%, NVVM %.0f%%, ptxas %.0f%%\n", 100 * fe / t, 100 * nvvm / t, 100 * ptx / t }' "$tmp/all"
echo "# variants: $(grep -c '^[0-9]' "$tmp/all"), CPU over 2.0 s: $(awk '$1 > 2.0' "$tmp/all" | wc -l), wall over 2.0 s: $(awk '$2 > 2.0' "$tmp/all" | wc -l), max CPU $(sort -rn "$tmp/all" | head -n 1 | cut -f1) s"
