# bench/device_call.sh — what every device call script (bench/data/<record>/callN.sh) starts with,
# sourced rather than copied into each: the call's clock, the card's line, and issue 13's forward
# grid in the script's place when the machine turns out to be an H200 (the card the project is
# judged on, which device calls naming it have mostly not got).
#
#   source bench/device_call.sh 560   # LIMIT's default: the seconds the call may use
#   h200_grid "$PACK" 64,128,256       # on an H200: the grid of those head dims on PACK, then exit
#   card_line                          # $OUT/gpu.txt: name, driver, SM clock, temperature
#   ... [ "$(left)" -gt 60 ] && ...    # seconds left of LIMIT
#
# Needs OUT; LIMIT from the environment wins over the default. FT_H200_GRID names the grid
# script (default: session 27's call2.sh, which tunes the head dims cold and measures the grid
# against SDPA flash and cuDNN through the runtime).
set -uo pipefail
t0=$(date +%s)
LIMIT=${LIMIT:-${1:?device_call.sh: source it with the default LIMIT in seconds}}
: "${OUT:?device_call.sh: OUT (the folder the device returns) is not set}"

# Seconds left of LIMIT.
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }

# The card's name, driver, SM clock and temperature, for the record.
card_line() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$OUT/gpu.txt"
}

# On an H200: the forward grid of head dims $2 on pack $1 within what is left, then the script
# ends with the grid's status. Elsewhere, or with FT_NO_H200_GRID=1 (a script run for its own
# work on either card), nothing happens.
h200_grid() {
  local pack=${1:?h200_grid PACK DIMS} dims=${2:?h200_grid PACK DIMS}
  [ "${FT_NO_H200_GRID:-0}" = 1 ] && return 0
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || return 0
  PACK=$pack DIMS=$dims LIMIT=$(left) OUT=$OUT bash "${FT_H200_GRID:-bench/data/h200-2026-12-05-s27/call2.sh}"
  exit
}
