#!/usr/bin/env bash
# usage: h6_compile_all.sh CLI OUTDIR URIFILE
CLI=$1; OUT=$2; mkdir -p $OUT
while read -r uri; do
  $CLI generate --variant $uri -o $OUT/$uri.cu 2>/dev/null
  $CLI compile $OUT/$uri.cu --arch sm_90a --no-cache -o $OUT/$uri.cubin > $OUT/$uri.log 2>&1 || echo "FAIL $uri"
done < $3
echo finished
