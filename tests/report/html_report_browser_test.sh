#!/usr/bin/env bash
# Browser test of `flashtune db report --html`: fills a database through the replay runner
# (`flashtune tune --replay`), renders the page, loads it in Debian's headless chromium, takes a
# screenshot and fails on any console message (the page has no scripts, so any is an error).
#
# usage: html_report_browser_test.sh FLASHTUNE_CLI WORK_DIR
#   FLASHTUNE_REPORT_SCREENSHOT=PATH  also copy the screenshot there
#   FLASHTUNE_REPORT_WINDOW=WxH       window size (default 1400,2400)
# Exit: 0 pass, 1 fail, 77 skipped (no chromium; ctest's SKIP_RETURN_CODE).
set -u -o pipefail

CLI="${1:?usage: $0 FLASHTUNE_CLI WORK_DIR}"
WORK="${2:?usage: $0 FLASHTUNE_CLI WORK_DIR}"
WINDOW="${FLASHTUNE_REPORT_WINDOW:-1400,2400}"

fail() { echo "FAIL: $*" >&2; exit 1; }

CHROMIUM=""
for c in chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then CHROMIUM="$(command -v "$c")"; break; fi
done
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium not found (Debian: apt-get install chromium; scripts/setup.sh installs it)" >&2
  exit 77
fi

rm -rf "$WORK"
mkdir -p "$WORK" || fail "cannot create $WORK"
cd "$WORK" || fail "cannot enter $WORK"

# Runs headless chromium on file $1, screenshot to $2, console log to $3.
shoot() {
  local page="$1" png="$2" log="$3"
  # Its own profile dir: never touches ~/.config; --enable-logging=stderr --v=0 prints every
  # console message as "INFO:CONSOLE(...)" / "INFO:CONSOLE:N]" lines.
  timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
    --hide-scrollbars --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0 \
    --window-size="$WINDOW" --screenshot="$png" "file://$page" >"$log.out" 2>"$log"
}

# 1. The console check must be able to fail: a probe page with a script error must be caught.
cat >probe.html <<'EOF'
<!DOCTYPE html><html><body><p>probe</p><script>console.error("probe-console-error"); noSuchFunction();</script></body></html>
EOF
shoot "$WORK/probe.html" "$WORK/probe.png" "$WORK/probe.log" || fail "chromium failed on the probe page (see $WORK/probe.log)"
grep -q 'CONSOLE.*probe-console-error' probe.log ||
  fail "this chromium does not log console messages to stderr; the console check would be blind (see $WORK/probe.log)"
grep -q 'Uncaught' probe.log || fail "this chromium does not log uncaught errors (see $WORK/probe.log)"

# 2. Recorded timings: a smooth synthetic landscape over B_r x B_c x warps x stages for four
# problems, plus failures of every kind with messages that need escaping (markup, &, newlines).
awk 'BEGIN {
  OFS = ",";
  print "dtype,head_dim,causal,batch,seqlen_q,seqlen_k,heads_q,heads_kv,variant,status,median_us,iqr_us,message";
  np = split("bf16:64:0:8:2048:32 bf16:64:1:8:2048:32 bf16:128:0:4:4096:16 f16:128:1:4:4096:16", probs, " ");
  for (p = 1; p <= np; ++p) {
    split(probs[p], f, ":");
    dt = f[1]; d = f[2]; causal = f[3]; b = f[4]; n = f[5]; h = f[6];
    flops = 4 * b * h * n * n * d; if (causal) flops /= 2;
    base = flops / 300e12 * 1e6;
    obn = (p % 2) ? 128 : 64; ow = (p % 3) ? 8 : 4; os = (p == 2) ? 2 : 3;
    split("64 128", BR, " "); split("32 64 128", BC, " "); split("4 8", W, " "); split("1 2 3", S, " ");
    for (i = 1; i <= 2; ++i) for (j = 1; j <= 3; ++j) for (k = 1; k <= 2; ++k) for (l = 1; l <= 3; ++l) {
      br = BR[i]; bc = BC[j]; w = W[k]; s = S[l];
      if (br % (w * 16) != 0) continue;          # not a valid variant: each warp owns 16k rows
      pen = 1 + 0.15 * abs(log(br / 128) / log(2)) + 0.12 * abs(log(bc / obn) / log(2)) + \
            0.10 * abs(log(w / ow) / log(2)) + 0.04 * abs(s - os);
      us = base * pen * (1 + 0.004 * sin(i * 7 + j * 3 + k * 5 + l * 11 + p));
      uri = sprintf("fa2_fwd_%s_d%d_br%d_bc%d_w%d_s%d_%s", dt, d, br, bc, w, s, causal ? "causal" : "full");
      status = "ok"; msg = "";
      if (d == 128 && bc == 128 && s == 3) { status = "out_of_resources";
        msg = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 245760): CUDA_ERROR_INVALID_VALUE: smem 240 KB > 227 KB"; }
      if (p == 1 && br == 64 && bc == 32 && w == 4 && s == 1) { status = "compile_error";
        msg = "fa2_fwd.cuh(212): error: <script>alert(1)</script> & expected a \";\"\nfa2_fwd.cuh(213): note: while instantiating kStages & kWarps, kBlockN\n1 error detected in the compilation of \"" uri "\"."; }
      if (p == 1 && br == 64 && bc == 64 && w == 4 && s == 2) { status = "wrong_result";
        msg = "max |o - ref| = 0.0625 at [0, 17, 3, 5] (tolerance 0.0156); lse ok"; }
      if (p == 3 && br == 64 && bc == 32 && w == 4 && s == 3) { status = "fault";
        msg = "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"; }
      if (p == 4 && br == 128 && bc == 32 && w == 8 && s == 1) { status = "timeout";
        msg = "kernel did not finish within 10 s"; }
      print dt, d, causal, b, n, n, h, h, uri, status, sprintf("%.4f", status == "ok" ? us : 0), \
            sprintf("%.4f", us * 0.003), csv(msg);
    }
  }
}
function abs(x) { return x < 0 ? -x : x }
function csv(x) { if (x !~ /[,"\n]/) return x; gsub(/"/, "\"\"", x); return "\"" x "\"" }' >replay.csv || fail "awk failed"

"$CLI" tune --strategy exhaustive --replay replay.csv --db report.db >tune.log 2>&1 || fail "flashtune tune --replay failed: $(tail -5 tune.log)"
"$CLI" db report --db report.db --html report.html 2>report.log || fail "flashtune db report failed: $(cat report.log)"
[ -s report.html ] || fail "report.html is empty"
if grep -qiE 'https?://|<script' report.html; then fail "report.html references the network or holds a script"; fi

# 3. The real page: a screenshot, and not one console message.
shoot "$WORK/report.html" "$WORK/report.png" "$WORK/report.log.chromium" ||
  fail "chromium failed on the report (see $WORK/report.log.chromium)"
if grep -E 'CONSOLE|Uncaught' report.log.chromium; then fail "console messages while loading the report (above)"; fi
[ -f report.png ] || fail "no screenshot written"
size=$(stat -c %s report.png)
[ "$(head -c 8 report.png | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "report.png is not a PNG"
# A blank 1400x2400 page compresses to ~12 KB; the report's text and heatmaps make it much larger.
[ "$size" -gt 60000 ] || fail "report.png is only $size bytes: the page looks blank"
# Width and height from the IHDR chunk (big-endian at bytes 16..23).
dims=$(od -An -tu1 -j16 -N8 report.png | awk '{ print ($1*16777216+$2*65536+$3*256+$4) "x" ($5*16777216+$6*65536+$7*256+$8) }')
[ "$dims" = "${WINDOW/,/x}" ] || fail "screenshot is $dims, expected ${WINDOW/,/x}"

if [ -n "${FLASHTUNE_REPORT_SCREENSHOT:-}" ]; then cp report.png "$FLASHTUNE_REPORT_SCREENSHOT" || fail "copy failed"; fi
echo "PASS: $WORK/report.html rendered by $("$CHROMIUM" --version 2>/dev/null | head -1); screenshot $WORK/report.png ($size bytes, $dims)"
