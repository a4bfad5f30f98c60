#!/usr/bin/env bash
# Folds what a device call wrote under OUT into one archive, OUT/logs.tgz, keeping the files
# named as arguments (paths relative to OUT) beside it as they are: the device machine returns
# at most 8 files from $OUT, two folders deep, so a call that leaves per-test logs or nested
# folders loses the rest. Run it last in a call script.
# usage: bench/pack_out.sh OUT [KEEP...]      (extract with: tar xzf logs.tgz)
set -euo pipefail
OUT=${1:?usage: pack_out.sh OUT [KEEP...]}
shift
tmp=$(mktemp -d)
for keep in "$@"; do
  [ -f "$OUT/$keep" ] && cp "$OUT/$keep" "$tmp/$(basename "$keep")"
done
tar czf "$tmp/logs.tgz" -C "$OUT" .
find "$OUT" -mindepth 1 -delete
mv "$tmp"/* "$OUT"/
rmdir "$tmp"
ls "$OUT"
