#!/usr/bin/env bash
# Runs staged examples or benches on the GPU machine, each under a time limit (LIM seconds,
# default 150), from the repository root after .device/ is in place (device-stage, or
# benches/device-subset.sh and a rename). Full output to $OUT/examples.log; the last TAILN lines
# (default 8) of each are printed with its exit status and time.
#
#   LIM=120 bash benches/device-examples.sh "hgemm" "hgemm-hopper --size 8192" "libs_bench"
set -u
OUT=${OUT:-$(mktemp -d)}
bash "${CHORUS_STAGE:-.device}/run.sh" no_such_test_filter >/dev/null 2>&1
export CHORUS_REQUIRE_GPU=1
mkdir -p examples benches
for spec in "$@"; do
  start=$(date +%s)
  out=$(timeout ${LIM:-150} bash "${CHORUS_STAGE:-.device}/run.sh" --bin $spec 2>&1); rc=$?
  { echo "=== $spec rc=$rc $(( $(date +%s) - start ))s"; echo "$out"; } >> "$OUT/examples.log"
  echo "=== $spec rc=$rc $(( $(date +%s) - start ))s"; echo "$out" | grep -v '^NVIDIA H200' | tail -n ${TAILN:-8}
done
