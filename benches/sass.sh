#!/usr/bin/env bash
# The SASS of a kernel file, on a machine without a GPU: what ptxas made of each kernel
# (registers, spills) and the instruction mix of one function, so that a kernel can be tuned
# between the sessions that have a GPU (HGMMA and UTMALDG counts, memory barriers in a main
# loop, 16- or 32-bit stores, local-memory traffic).
#
#   bash benches/sass.sh examples/kernels/hgemm-hopper.lisp hgemm_hopper_multicast
#   bash benches/sass.sh -l tensor-core examples/kernels/hgemm.lisp hgemm
#   SASS_ARCH=sm_90 bash benches/sass.sh FILE FUNCTION      # default sm_90a
#
# The kernel file is compiled as the examples compile it (`examples/kernels/prelude.lisp` first
# when the file is under examples/kernels, `-l LIBRARY` passed to `chorus compile`), then by the
# pip nvcc that .ci/run installs (~/.cache/chorus-ci/nvcc-13.0) to a cubin. cuobjdump and nvdisasm
# come from NVIDIA's PyPI wheels (13.2, the first with both on PyPI; they read 13.0's cubins),
# kept in ~/.cache/chorus-ci/sass-tools. The full listing is written to $SASS_OUT (default
# /tmp/chorus-FUNCTION.sass).
set -euo pipefail
library=()
if [ "${1:-}" = "-l" ]; then library=(-l "${2:?-l needs a library}"); shift 2; fi
file=${1:?usage: sass.sh [-l LIBRARY] KERNEL-FILE FUNCTION}
function=${2:?usage: sass.sh [-l LIBRARY] KERNEL-FILE FUNCTION (the C name: hgemm_hopper)}
arch=${SASS_ARCH:-sm_90a}
cache=${HOME:-/tmp}/.cache/chorus-ci
nvcc_dir=${CHORUS_CI_NVCC_DIR:-$cache/nvcc-13.0}
tools=$cache/sass-tools
root=$(cd "$(dirname "$0")/.." && pwd)

[ -x "$nvcc_dir/nvidia/cu13/bin/nvcc" ] || { echo "no nvcc in $nvcc_dir: run .ci/run once (or its pip line)" >&2; exit 1; }
if [ ! -x "$tools/nvidia/cu13/bin/cuobjdump" ] || [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$tools" \
    "nvidia-cuda-cuobjdump==13.2.51" "nvidia-cuda-nvdisasm==13.2.51"
fi
export CUDA_PATH=$nvcc_dir/nvidia/cu13
export PATH=$CUDA_PATH/bin:$tools/nvidia/cu13/bin:$PATH

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
case $(cd "$(dirname "$file")" && pwd) in
  "$root/examples/kernels") cat "$root/examples/kernels/prelude.lisp" "$file" > "$work/kernel.lisp" ;;
  *) cp "$file" "$work/kernel.lisp" ;;
esac
(cd "$root" && cargo build -q --release -p chorus-cli)
"$root/target/release/chorus" compile "${library[@]}" "$work/kernel.lisp" -o "$work/kernel.cu"
nvcc -arch="$arch" -cubin -O3 -Xptxas -v -o "$work/kernel.cubin" "$work/kernel.cu" 2>&1 \
  | grep -E "Compiling entry|registers|spill|warning" || true
out=${SASS_OUT:-/tmp/chorus-$function.sass}
cuobjdump -sass -fun "$function" "$work/kernel.cubin" > "$out"
echo "== $function: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$out") instructions ($out); the mix:"
grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_]+(\.[A-Z0-9_]+)*' "$out" \
  | awk '{print $NF}' | sort | uniq -c | sort -rn | head -40
