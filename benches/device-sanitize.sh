#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the GPU test binaries on the GPU
# machine, from the repository root, after `../shared/tools/device-stage` staged them in .device/:
#
#   bash benches/device-sanitize.sh
#
# One line per tool and binary: exit status, the tool's error summary, the test result, and the
# first findings. The gpu binary provokes CUDA API errors on purpose (UNSUPPORTED_PTX_VERSION).
root=$(pwd)
bash .device/run.sh no_such_test_filter >/dev/null 2>&1   # unpack and link as run.sh does
export CHORUS_REQUIRE_GPU=1 CUDA_PATH=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck initcheck; do
  while IFS=$'\t' read -r exe dir is_test tname; do
    case "$tname" in gpu|gpu_lang|cuda|corpus_gpu|image_choice|manager|compile_cache) ;; *) continue ;; esac
    out=$(cd "$root/$dir" && CARGO_MANIFEST_DIR="$root/$dir" timeout 300 "$san" --tool $tool --print-limit 5 "$root/.device/bin/$exe" --test-threads=1 2>&1); rc=$?
    errs=$(echo "$out" | grep -oE "ERROR SUMMARY: [0-9]+ error" | tail -1)
    res=$(echo "$out" | grep -E "^test result" | tail -1)
    echo "$tool $tname rc=$rc ${errs:-no summary} | $res"
    echo "$out" | grep -E "^=+ (Invalid|Program hit|Uninitialized|Race|Barrier|ERROR)|^---- " | head -8
  done < .device/manifest.tsv
done
