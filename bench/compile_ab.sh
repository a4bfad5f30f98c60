#!/usr/bin/env bash
# A/B of NVRTC options on the compile of generated variants: for each variant, each option set
# compiles it REPEAT times (one process at a time, the sets interleaved so that both see the same
# load) and prints the fastest run's CPU and wall seconds, NVRTC's own phase split (--time: C++
# front end, NVVM optimizer, ptxas, in ms) and a hash of the cubin's SASS (`cuobjdump -sass`), so
# that an option that makes compiles faster but changes the code is seen at once.
# The SASS hash needs cuobjdump and nvdisasm (on PATH, or CUOBJDUMP=path; the PyPI wheels
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm carry both); without them it hashes the cubin's
# bytes instead and says so (a stricter test: same bytes implies same SASS, not the reverse).
# usage: bench/compile_ab.sh CLI ARCH "OPTIONS_A" "OPTIONS_B" URI...
#        e.g. bench/compile_ab.sh build/flashtune sm_90a "--minimal" "--minimal --split-compile=2" \
#               hopper_fwd_bf16_d128_bm128_bn192_wg2_s2_p1_pp1_ov1_causal
#        options are space-separated NVRTC options (the library's GeneratedSourceRequest passes
#        --minimal; the CLI adds the arch, --std=c++17 and --ptxas-options=--verbose to both).
# env:   REPEAT (default 2): runs per variant and option set; the minimum CPU time is kept.
set -uo pipefail
if [ $# -lt 5 ]; then
  echo "usage: $0 CLI ARCH \"OPTIONS_A\" \"OPTIONS_B\" URI..." >&2
  exit 2
fi
CLI=$1; ARCH=$2; OPTS_A=$3; OPTS_B=$4; shift 4
REPEAT=${REPEAT:-2}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || true)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sass_hash() {  # cubin -> short hash of its SASS (or of its bytes without cuobjdump)
  if [ -n "$CUOBJDUMP" ]; then
    "$CUOBJDUMP" -sass "$1" | md5sum | cut -c1-10
  else
    md5sum < "$1" | cut -c1-10
  fi
}

# One compile: sets $cpu $wall $fe $nvvm $ptx and leaves the cubin in $tmp/$2.cubin; 1 on failure.
compile_once() {  # source tag options
  local opt_args=() o
  for o in $3; do opt_args+=("--option=$o"); done
  rm -f "$tmp/t.csv"
  { TIMEFORMAT='%R %U %S'; time "$CLI" compile "$1" --arch "$ARCH" --no-cache "${opt_args[@]}" \
      --option=--time="$tmp/t.csv" -o "$tmp/$2.cubin" > "$tmp/log" 2>&1; } 2> "$tmp/time" || return 1
  local user sys
  read -r wall user sys < "$tmp/time"
  cpu=$(echo "$user + $sys" | bc)
  fe=$(awk -F', ' '/Frontend/ {print $3}' "$tmp/t.csv")
  nvvm=$(awk -F', ' '/NVVM Optimizer/ {print $3}' "$tmp/t.csv")
  ptx=$(awk -F', ' '/PTX Translation/ {print $3}' "$tmp/t.csv")
}

echo "# A: $OPTS_A"
echo "# B: $OPTS_B"
echo "# $REPEAT run(s) each, min CPU kept; load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "# SASS hash: $([ -n "$CUOBJDUMP" ] && echo "cuobjdump -sass ($CUOBJDUMP)" || echo "cubin bytes (no cuobjdump found)")"
printf '# set\tcpu_s\twall_s\tfe_ms\tnvvm_ms\tptxas_ms\tsass\turi\n'
for uri in "$@"; do
  "$CLI" generate --variant "$uri" -o "$tmp/k.cu" || { echo "FAIL generate $uri"; continue; }
  declare -A best_cpu=() line=()
  for ((r = 0; r < REPEAT; ++r)); do
    for set in A B; do
      opts=$OPTS_A; [ $set = B ] && opts=$OPTS_B
      if ! compile_once "$tmp/k.cu" "$set" "$opts"; then
        line[$set]="FAIL"; tail -n 5 "$tmp/log"; continue
      fi
      if [ -z "${best_cpu[$set]:-}" ] || (( $(echo "$cpu < ${best_cpu[$set]}" | bc) )); then
        best_cpu[$set]=$cpu
        line[$set]=$(printf '%.2f\t%.2f\t%s\t%s\t%s\t%s' "$cpu" "$wall" "$fe" "$nvvm" "$ptx" "$(sass_hash "$tmp/$set.cubin")")
      fi
    done
  done
  for set in A B; do printf '%s\t%s\t%s\n' "$set" "${line[$set]:-FAIL}" "$uri"; done
  unset best_cpu line
done | tee "$tmp/all"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F'\t' '$1 == "A" || $1 == "B" { n[$1]++; cpu[$1] += $2; sass[$1, $8] = $7 }
  END {
    same = 0; total = 0
    for (k in sass) { split(k, p, SUBSEP); if (p[1] == "A") { total++; if (sass["B", p[2]] == sass[k]) same++ } }
    printf "# mean CPU s: A %.3f, B %.3f (B/A %.3f); SASS identical in %d of %d variants\n",
           cpu["A"] / n["A"], cpu["B"] / n["B"], (cpu["B"] / n["B"]) / (cpu["A"] / n["A"]), same, total
  }' "$tmp/all"
