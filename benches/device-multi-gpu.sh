#!/usr/bin/env bash
# Issue 12's run on a machine with several GPUs (nvidia-h100-x2 … nvidia-h200-x8), in one device
# call: the tests that use every GPU, the all-reduce against NCCL called from C, and the strong
# scaling of the two data-parallel examples from 1 to N GPUs, in one process over the GPUs and
# in one process a rank (`nccl-launch`). Full output per step in $OUT/NAME.log; a summary line
# per step with its last lines. About 6 minutes on 2 GPUs (STEP_LIMIT_S caps each step).
#
# Here (about 8 minutes on 2 cores):
#
#   ../shared/tools/device-stage --examples --benches
#   bash benches/device-subset.sh .devA '^(nccl-allreduce|nccl-nbody|nccl-gemm|nccl-launch|gpu_nccl|peer_copies|devices|gpu)$'
#
# The call (carry [".devA"]): rm -rf .device && mv .devA .device && bash benches/device-multi-gpu.sh
#
# NVLink multicast stays off (the device tool's KINDS.md: it can put shared GPUs out of service);
# the launcher sets NCCL_NVLS_ENABLE=0 for its ranks too.
set -u
export NCCL_NVLS_ENABLE=0 CHORUS_REQUIRE_GPU=1
OUT=${OUT:-$(mktemp -d)}
limit=${STEP_LIMIT_S:-240}
gpus=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"
nvidia-smi topo -m > "$OUT/topology.txt" 2>&1   # how the GPUs are linked (NVLink, PCIe)

# One step: NAME, then run.sh --bin's arguments.
step() {
  local name=$1 start rc
  shift
  start=$(date +%s)
  timeout "$limit" bash .device/run.sh --bin "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "=== $name rc=$rc $(( $(date +%s) - start ))s: $*"
  grep -vE '^(NVIDIA |ln: )' "$OUT/$name.log" | tail -n "${TAILN:-12}"
}

# The tests that use several devices (peer copies, per-device programs, NCCL's multi-rank ones).
OUT=$OUT bash benches/device-tests.sh '^(peer_copies|devices|gpu_nccl|gpu)$' "$limit" | tail -n 8

# All-reduce bus bandwidth, 1 MiB to 4 GiB, one process over every GPU, against NCCL from C
# before and after (goal ≥ 0.95 of C's), then one process a rank.
step allreduce nccl-allreduce --baseline --max-mib 4096
step allreduce-launched nccl-launch --gpus "$gpus" -- "$PWD/.device/bin/nccl-allreduce" --max-mib 4096

# Strong scaling: each run prints its own time beside one GPU's and the speed-up (goal for
# n-body: ≥ 0.9 × N at N = 2, 256K bodies); 1, 2, 4, 8 GPUs as there are.
for n in 1 2 4 8; do
  [ "$n" -le "$gpus" ] || break
  devices=$(seq -s, 0 $((n - 1)))
  CUDA_VISIBLE_DEVICES=$devices step "nbody-$n" nccl-nbody --bodies 262144
  CUDA_VISIBLE_DEVICES=$devices step "gemm-$n" nccl-gemm --size 16384
done
step nbody-launched nccl-launch --gpus "$gpus" -- "$PWD/.device/bin/nccl-nbody" --bodies 262144
step gemm-launched nccl-launch --gpus "$gpus" -- "$PWD/.device/bin/nccl-gemm" --size 16384
echo "logs in $OUT"
