#!/usr/bin/env bash
# Per-variant NVRTC compile time of a family's default space (issue 13: <= 2 s per variant on
# the 2-core development machine). Generates each variant's source with the CLI, compiles it
# with `flashtune compile --no-cache --option=--minimal` (NVRTC + ptxas with the library's options,
# one process per variant, one at a time) and
# prints "cpu_s wall_s registers spill URI" per variant, then the slowest and the load average (the
# machine is shared: a time only means something next to the load it ran under).
# usage: bench/compile_times.sh [CLI] [FAMILY] [ARCH] [DTYPES] [HEAD_DIMS]
#        defaults: build/flashtune hopper_fwd sm_90a "bf16" "64 128 256"
set -uo pipefail
CLI=${1:-build/flashtune}
FAMILY=${2:-hopper_fwd}
ARCH=${3:-sm_90a}
DTYPES=${4:-bf16}
DIMS=${5:-64 128 256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for dt in $DTYPES; do
  for d in $DIMS; do
    for c in 0 1; do
      for uri in $("$CLI" generate --dtype "$dt" --head-dim "$d" --causal $c --arch "$ARCH" 2>/dev/null | grep "^$FAMILY"); do
        "$CLI" generate --variant "$uri" -o "$tmp/k.cu" || exit 1
        # wall and CPU (user + sys) seconds of the compile process
        # --minimal: as the library compiles generated sources (GeneratedSourceRequest, flashtune/compiler.h)
        { TIMEFORMAT='%R %U %S'; time "$CLI" compile "$tmp/k.cu" --arch "$ARCH" --no-cache --option=--minimal > "$tmp/report" 2>&1; } 2> "$tmp/time" \
          || { echo "FAIL $uri"; cat "$tmp/report"; continue; }
        read -r wall user sys < "$tmp/time"
        regs=$(grep -o 'registers[^,]*' "$tmp/report" | head -n 1)
        spill=$(grep -o '[0-9]* bytes spill stores' "$tmp/report" | head -n 1)
        printf '%.2f\t%.2f\t%s\t%s\t%s\n' "$(echo "$user + $sys" | bc)" "$wall" "$regs" "$spill" "$uri"
      done
    done
  done
done | tee "$tmp/all"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# slowest:"; sort -rn "$tmp/all" | head -n 5
echo "# variants: $(grep -c . "$tmp/all"), CPU over 2.0 s: $(awk '$1 > 2.0' "$tmp/all" | wc -l), wall over 2.0 s: $(awk '$2 > 2.0' "$tmp/all" | wc -l)"
