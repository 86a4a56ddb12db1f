#!/usr/bin/env bash
# Runs the GPU test binaries of the staged set (.device/) one by one, each under a time limit, on
# the GPU machine, with GPU tests (and Vulkan, where .gl/ carries its loader) required. Full
# output goes to $OUT/tests.log (the device tool brings it back); a summary line per binary and
# the failures are printed.
# Usage: bash benches/device-tests.sh [TARGET-NAME-REGEX] [SECONDS-PER-BINARY]
# (TESTARGS passes arguments such as a test-name filter to every binary.) It runs every staged
# test binary whose target name matches (default: all): benches/device-subset.sh chooses what
# travels, so no second list here can leave a new GPU test behind.
set -u
OUT=${OUT:-$(mktemp -d)}; root=$(pwd); pat=${1:-.}; lim=${2:-240}
bash .device/run.sh no_such_test_filter >/dev/null 2>&1   # unpack and link
# The Vulkan loader, where .gl/ carries it (the device tool's README says how to fetch it).
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" / 2>/dev/null; done; ldconfig 2>/dev/null
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
vulkan=0; [ -d .gl ] && vulkan=1  # Vulkan required only where its loader came along
export CHORUS_REQUIRE_VULKAN=${CHORUS_REQUIRE_VULKAN:-$vulkan} CHORUS_REQUIRE_GPU=1 CUDA_PATH=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH RUST_BACKTRACE=1
export LD_LIBRARY_PATH="$root/.device/lib"
summary=""
while IFS=$'\t' read -r exe dir is_test tname; do
  [ "$is_test" = "1" ] || continue
  [[ "$tname" =~ $pat ]] || continue
  start=$(date +%s)
  out=$(cd "$root/$dir" && CARGO_MANIFEST_DIR="$root/$dir" timeout "$lim" "$root/.device/bin/$exe" ${TESTARGS:-} 2>&1); rc=$?
  echo "=== $tname ($dir) rc=$rc $(( $(date +%s) - start ))s" >> "$OUT/tests.log"
  echo "$out" >> "$OUT/tests.log"
  res=$(echo "$out" | grep -E '^test result' | tail -1)
  line="$tname rc=$rc $(( $(date +%s) - start ))s ${res#test result: }"
  echo "$line"; summary+="$line"$'\n'
  echo "$out" | grep -E '^test .* FAILED|^---- |panicked' | head -12
done < .device/manifest.tsv
echo "===== summary"; echo "$summary"
