#!/usr/bin/env bash
# Session 23, call 2: the whole GPU suite on 41e5881 (bench/gpu_suite.sh: each test in a process
# of its own, as ctest runs them; call 1 ran the tuner's GPU tests in one process, where the
# forked worker cannot start), then compute-sanitizer memcheck over the paged tune test with the
# worker process included.
# usage (GPU): OUT=$OUT bash bench/data/h200-2026-12-04-s23/call2.sh
set -uo pipefail
C=.devcarry-s23a
W=/tmp/call2
mkdir -p $W
s=$(date +%s)
OUT=$W SUITE_S=420 JOBS=2 bash bench/gpu_suite.sh $C > $W/suite-stdout.txt 2>&1
echo "suite exit $? in $(( $(date +%s) - s )) s"
cat $W/suite-stdout.txt | tail -12
export LD_LIBRARY_PATH=$C:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} FLASHTUNE_CLI=$C/flashtune FLASHTUNE_WORKER=$C/flashtune
s=$(date +%s)
timeout 150 compute-sanitizer --target-processes all --tool memcheck --error-exitcode 3 $C/flashtune_gpu_tests \
  --gtest_filter=TuneGpu.PagedDecodeIsVerifiedAndTimedOnPages > $W/sanitizer.log 2>&1
echo "memcheck (paged tune, worker included): exit $? in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY' $W/sanitizer.log | tr '\n' ' ')"
grep -E "OK|FAILED" $W/sanitizer.log | head -5
cp $W/suite-stdout.txt $W/sanitizer.log $OUT/
gzip -c $W/gpu_suite.log > $OUT/gpu_suite.log.gz
