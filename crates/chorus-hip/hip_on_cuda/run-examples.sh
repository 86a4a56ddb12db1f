#!/usr/bin/env bash
# Runs example binaries on Chorus's HIP backend on an NVIDIA GPU: builds the HIP-on-CUDA runtime
# (runtime/hip_on_cuda_runtime.c, a libamdhip64.so over the CUDA driver and NVRTC), puts it on
# ROCM_PATH and runs each example with CHORUS_BACKEND=hip, so the facade's HIP backend, the
# chorus-hip runtime and the HIP dialect's source (compiled by NVRTC against hip/hip_runtime.h)
# do the work. Each example verifies its own result and exits non-zero when it is wrong.
#
#   crates/chorus-hip/hip_on_cuda/run-examples.sh BIN_DIR EXAMPLE...
#
# BIN_DIR holds the example binaries (target/release/examples). Needs cc and CUDA's headers
# ($CUDA_PATH/include, else /usr/local/cuda/include). Prints one PASS/FAIL line per example and
# exits 1 when any failed. Each example gets $CHORUS_EXAMPLE_TIMEOUT seconds (default 60).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bins=$1; shift
cuda=${CUDA_PATH:-/usr/local/cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib" "$work/include"
cc -shared -fPIC -O2 -Wall -Werror -I"$cuda/include" "$here/runtime/hip_on_cuda_runtime.c" \
  -o "$work/lib/libamdhip64.so" -ldl || { echo "FAIL: building the HIP-on-CUDA runtime"; exit 1; }
ln -s libamdhip64.so "$work/lib/libhiprtc.so"  # hipRTC is the same library, found first
cp -r "$here/hip" "$work/include/"
export ROCM_PATH=$work CHORUS_BACKEND=hip CHORUS_CACHE_DIR=$work/cache
export CHORUS_HIP_ON_CUDA_INCLUDE=$work/include:$cuda/include
failed=()
for example in "$@"; do
  echo "=== $example (CHORUS_BACKEND=hip, HIP on CUDA)"
  out=$(timeout "${CHORUS_EXAMPLE_TIMEOUT:-60}" "$bins/$example" 2>&1); rc=$?
  echo "$out" | tail -n 25
  if [ $rc -eq 0 ]; then echo "PASS: $example"; else echo "FAIL: $example (exit $rc)"; failed+=("$example"); fi
done
echo "HIP on CUDA examples: $(( $# - ${#failed[@]} )) of $# passed${failed:+; failed: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
