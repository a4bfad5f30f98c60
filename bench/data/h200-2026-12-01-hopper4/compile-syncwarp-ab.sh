#!/usr/bin/env bash
# Paired compile-time A/B of FT_HOPPER_SYNCWARP_TILE (1: the shipped template; 0: before): the 12
# bf16 variants of the default space that took over 2.0 CPU s in session 13
# (h200-2026-12-01-hopper3/compile-times-before.txt), each compiled alternately with 0 and 1,
# twice, one at a time. Prints "cpu_s(sw0 min) cpu_s(sw1 min) spill(sw0) spill(sw1) URI" and the
# load. usage: compile-syncwarp-ab.sh CLI
CLI=${1:-build/flashtune}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for v in d128_bm128_bn192_wg2_s2_p1_pp1_ov1_causal d256_bm128_bn64_wg2_s2_p1_pp1_ov1_full \
         d128_bm128_bn192_wg2_s2_p1_pp1_ov1_full d256_bm128_bn80_wg2_s2_p1_pp1_ov1_causal \
         d128_bm128_bn176_wg2_s2_p0_pp1_ov1_full d256_bm128_bn64_wg2_s2_p0_pp1_ov1_full \
         d128_bm128_bn192_wg2_s2_p0_pp1_ov1_causal d128_bm128_bn192_wg2_s2_p0_pp1_ov1_full \
         d128_bm128_bn128_wg2_s2_p1_pp1_ov1_causal d128_bm128_bn176_wg2_s2_p1_pp1_ov1_causal \
         d256_bm128_bn80_wg2_s2_p1_pp1_ov1_full d256_bm128_bn80_wg2_s2_p0_pp1_ov1_full; do
  uri=hopper_fwd_bf16_$v
  "$CLI" generate --variant "$uri" -o "$T/k.cu" || exit 1
  declare -A best spill
  for rep in 1 2; do
    for sw in 0 1; do
      { TIMEFORMAT='%U %S'; time "$CLI" compile "$T/k.cu" --arch sm_90a --no-cache --option=--minimal \
          --option=-DFT_HOPPER_SYNCWARP_TILE=$sw > "$T/rep" 2>&1; } 2> "$T/time"
      read -r user sys < "$T/time"
      cpu=$(echo "$user + $sys" | bc)
      if [ -z "${best[$sw]:-}" ] || [ "$(echo "$cpu < ${best[$sw]}" | bc)" = 1 ]; then best[$sw]=$cpu; fi
      spill[$sw]=$(awk '/spill stores/ {print $3}' "$T/rep")
    done
  done
  printf '%.2f\t%.2f\t%s\t%s\t%s\n' "${best[0]}" "${best[1]}" "${spill[0]}" "${spill[1]}" "$uri"
  unset best spill
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
