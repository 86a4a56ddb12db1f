#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the GPU test binaries on the GPU
# machine, from the repository root, after `../shared/tools/device-stage` staged them in .device/:
#
#   bash benches/device-sanitize.sh [TARGET-NAME-REGEX] [TOOLS]
#
# The default set is the binaries whose kernels Chorus writes (the runtime's, the language's,
# the facade's, the corpus); pass '.' for every staged GPU test binary but `cuda_fault`, which
# faults on purpose (the libraries' tests then run NVIDIA's kernels under the tools too), and a
# space-separated TOOLS list to run fewer tools. Each binary gets SANITIZE_TIMEOUT_S (300) a
# tool. With SANITIZE_DEADLINE_S=N, nothing starts after N seconds and no run outlasts them: the
# pairs not run are listed at the end ("not run: TOOL BINARY"), for a second device call.
# SANITIZE_JOBS=N runs N tool-and-binary pairs at once (the tools are bound by the host's CPUs,
# the GPU machine has 16; no test fills the device's memory, so they can share it).
#
# One line per tool and binary: exit status, the tool's error summary, the test result, and the
# first findings. The gpu binary provokes CUDA API errors on purpose (UNSUPPORTED_PTX_VERSION).
root=$(pwd)
bash .device/run.sh no_such_test_filter >/dev/null 2>&1   # unpack and link as run.sh does
export CHORUS_REQUIRE_GPU=1 CUDA_PATH=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
pat=${1:-'^(gpu|gpu_lang|cuda|corpus_gpu|image_choice|manager|compile_cache)$'}
start=$(date +%s)
deadline=${SANITIZE_DEADLINE_S:-}
jobs=${SANITIZE_JOBS:-1}
results=$(mktemp -d)
not_run=()
# One tool over one binary; its lines go to $results/N (printed in order at the end).
sanitize() {  # N TOOL TEST-NAME EXE DIR LIMIT
  local out rc errs res
  out=$(cd "$root/$5" && CARGO_MANIFEST_DIR="$root/$5" timeout "$6" "$san" --tool "$2" --print-limit 5 "$root/.device/bin/$4" --test-threads=1 2>&1); rc=$?
  errs=$(echo "$out" | grep -oE "(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard)" | tail -1)
  res=$(echo "$out" | grep -E "^test result" | tail -1)
  { echo "$2 $3 rc=$rc ${errs:-no summary} | $res"
    echo "$out" | grep -E "^=+ (Invalid|Program hit|Uninitialized|Race|Barrier|ERROR)|^---- " | head -8
  } > "$results/$1"
}
n=0
for tool in ${2:-memcheck racecheck synccheck initcheck}; do
  while IFS=$'\t' read -r exe dir is_test tname; do
    [ "$is_test" = "1" ] && [[ "$tname" =~ $pat ]] && [ "$tname" != cuda_fault ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    limit=${SANITIZE_TIMEOUT_S:-300}
    if [ -n "$deadline" ]; then
      left=$((deadline - ($(date +%s) - start)))
      if [ "$left" -lt 10 ]; then not_run+=("$tool $tname"); continue; fi
      [ "$left" -lt "$limit" ] && limit=$left
    fi
    n=$((n + 1))
    sanitize "$n" "$tool" "$tname" "$exe" "$dir" "$limit" < /dev/null &
  done < .device/manifest.tsv
done
wait
for i in $(seq 1 "$n"); do cat "$results/$i"; done
rm -rf "$results"
for pair in "${not_run[@]}"; do echo "not run: $pair"; done
