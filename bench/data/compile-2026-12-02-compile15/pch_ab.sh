#!/usr/bin/env bash
# PCH A/B (compile15): can NVRTC's precompiled headers cut the compile of a generated variant?
# The only part of a generated source that no variant parameter touches is ft_kernel_abi.cuh
# (ft_device.cuh reads ft_config::kBf16; the templates read every parameter), so the experiment
# moves that file to an #include at the top of one variant's source (a PCH covers the headers a
# TU includes before its first declaration), builds its PCH once (--create-pch) and compiles
# the source N times each without and with --use-pch, interleaved, printing CPU s (user+sys) and
# NVRTC's phases (--time: front end, NVVM, ptxas ms); then whether the cubins are identical.
# usage: pch_ab.sh CLI URI [N]
set -uo pipefail
CLI=$1; URI=$2; N=${3:-5}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$CLI" generate --variant "$URI" -o "$d/k.cu"
abi_start=$(grep -n '^#line 1 "ft_kernel_abi.cuh"' "$d/k.cu" | cut -d: -f1)
abi_end=$(awk -v s="$abi_start" 'NR > s && /^#line / {print NR; exit}' "$d/k.cu")
sed -n "$((abi_start + 1)),$((abi_end - 1))p" "$d/k.cu" > "$d/ft_kernel_abi.cuh"
{ echo '#include "ft_kernel_abi.cuh"'; sed -n "1,$((abi_start - 1))p" "$d/k.cu"; sed -n "$abi_end,\$p" "$d/k.cu"; } > "$d/k_inc.cu"
base=(--arch sm_90a --no-cache --option=--minimal --option=-I"$d")
"$CLI" compile "$d/k_inc.cu" "${base[@]}" --option=--create-pch="$d/h.pch" > /dev/null || exit 1
echo "# $URI; PCH $(stat -c %s "$d/h.pch") bytes; load before $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# mode cpu_s fe_ms nvvm_ms ptxas_ms"
for ((i = 0; i < N; ++i)); do
  for mode in plain pch; do
    extra=(); [ $mode = pch ] && extra=(--option=--use-pch="$d/h.pch")
    rm -f "$d/t.csv"
    /usr/bin/time -o "$d/tm" -f "%U %S" "$CLI" compile "$d/k_inc.cu" "${base[@]}" "${extra[@]}" \
      --option=--time="$d/t.csv" -o "$d/$mode.cubin" > /dev/null || { echo "FAIL $mode"; continue; }
    read -r u s < "$d/tm"
    echo "$mode $(echo "$u + $s" | bc) $(awk -F', ' '/Frontend|NVVM Optimizer|PTX Translation/ {printf "%s ", $3}' "$d/t.csv")"
  done
done | tee "$d/all"
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ n[$1]++; c[$1] += $2; f[$1] += $3 } END { for (m in n) printf "# %s: mean CPU %.3f s, mean front end %.1f ms\n", m, c[m] / n[m], f[m] / n[m] }' "$d/all"
cmp -s "$d/plain.cubin" "$d/pch.cubin" && echo "# cubins identical" || echo "# cubins DIFFER"
