#!/usr/bin/env bash
# Session 27, call 4 (what device time is left after call 3): session 26's call6.sh, the A/B of
# decode-plan-before-wait.patch (.devcarry-s26b) against main (.devcarry-s26), its decode GPU
# tests first, one bench pass (PASSES=1) unless PASSES says otherwise.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-05-s27/call4.sh
PASSES=${PASSES:-1} exec bash "$(dirname "$0")/../h200-2026-12-05-s26/call6.sh"
