#!/usr/bin/env bash
# Runs the benchmark suite and the workload examples on the GPU machine, from the repository root,
# after `../shared/tools/device-stage --examples --benches` staged the binaries in .device/:
#
#   bash benches/device-run.sh [OUTDIR]
#
# 1. builds the hand-written CUDA C baselines (benches/baselines/harness.cu) with nvcc -O3
#    -arch=sm_90 and runs them (rows `baseline NAME MS VALUE UNIT CHECK` into OUTDIR/baselines.tsv);
# 2. runs bench_suite against them (the table; OUTDIR/results.tsv for benches/plot.py);
# 3. runs every workload example (each checks its result against its CPU reference).
set -u
here=$(cd "$(dirname "$0")" && pwd)  # benches/ (or a copy of it carried in .device/)
out=${1:-${OUT:-$(mktemp -d)}}
stage=${CHORUS_STAGE:-.device}  # where device-stage put the binaries and run.sh
mkdir -p "$out" && out=$(cd "$out" && pwd)  # run.sh runs binaries from their package folder
nvcc=${CUDA_PATH:-/usr/local/cuda}/bin/nvcc
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
date -u
"$nvcc" -O3 -arch=sm_90 -o /tmp/chorus-baselines "$here/baselines/harness.cu" -lcublas -lcuda 2>&1 | grep -v -i warning
/tmp/chorus-baselines | tee "$out/baselines.tsv"
mkdir -p examples benches  # run.sh runs each binary from its package folder
bash "$stage/run.sh" --bin bench_suite --baseline "$out/baselines.tsv" --out "$out/results.tsv" 2>&1 | tee "$out/bench.log"
OUT="$out" TAILN=12 bash "$here/device-examples.sh" diffuse0 diffuse1 nbody sph reduction \
    transpose sgemm scan
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv
