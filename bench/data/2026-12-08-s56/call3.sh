#!/usr/bin/env bash
# Session 56, call 3, on either card: the default tune from a cold start (`flashtune tune`: an
# empty database and cubin cache, the CLI's defaults), issue 13's "at most 10 minutes cold on one
# H200": session 53's call2.sh with its H200 branch (the grid in its place) turned off.
# usage (GPU): MAIN=.devcarry-B OUT=$OUT [LIMIT=595] bash bench/data/2026-12-08-s56/call3.sh
FT_NO_H200_GRID=1 LIMIT=${LIMIT:-595} MAIN=${MAIN:?MAIN=.devcarry-NAME} OUT=${OUT:?} \
  bash bench/data/h100-2026-12-07-s53/call2.sh
