#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the GPU test binaries on the GPU
# machine, from the repository root, after `../shared/tools/device-stage` staged them in .device/:
#
#   bash benches/device-sanitize.sh [TARGET-NAME-REGEX] [TOOLS]
#
# The default set is the binaries whose kernels Chorus writes (the runtime's, the language's,
# the facade's, the corpus); pass '.' for every staged test binary but `cuda_fault`, which
# faults on purpose (the libraries' tests then run NVIDIA's kernels under the tools too), and a
# space-separated TOOLS list to run fewer tools. Each binary gets SANITIZE_TIMEOUT_S (300) a
# tool, those in SLOW below SANITIZE_SLOW_TIMEOUT_S (480), and they start first. With SANITIZE_DEADLINE_S=N, nothing starts after N seconds and no run outlasts them: the
# pairs not run are listed at the end ("not run: TOOL BINARY"), for a second device call.
# SANITIZE_JOBS=N runs N tool-and-binary pairs at once (the tools are bound by the host's CPUs,
# the GPU machine has 16; no test fills the device's memory, so they can share it).
#
# The tools slow every CUDA call down, so the tests' own time limits are stretched
# (`CHORUS_TEST_TIME_SCALE=8`, `chorus_cuda::testing::time_scale`): NCCL's multi-process tests
# otherwise time out while joining. What the tools cannot run is skipped, with the reason, from
# SKIPS below; what they report in NVIDIA's own code is recognised by KNOWN below.
#
# One line per tool and binary: exit status, the tool's error summary, the test result, the first
# findings, and a verdict: `clean`; `known: …` (every finding is one of KNOWN's, and every test
# passed); `no CUDA` (a host-only test binary: the tool stops with "terminated before first
# instrumented API call", and its tests passed); or `FAILED`. The last line counts the verdicts.
root=$(pwd)
bash .device/run.sh no_such_test_filter >/dev/null 2>&1   # unpack and link as run.sh does
export CHORUS_REQUIRE_GPU=1 CUDA_PATH=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
export CHORUS_TEST_TIME_SCALE=${CHORUS_TEST_TIME_SCALE:-8}
pat=${1:-'^(gpu|gpu_lang|cuda|corpus_gpu|image_choice|manager|compile_cache)$'}
# What the tools cannot run. One line each: TOOLS (comma-separated, or *), BINARY, TEST (a
# harness `--skip` filter, or * for the whole binary), why.
SKIPS="
*|driver_api|a_child_process_is_checkpointed_and_restored|compute-sanitizer does not support the checkpoint API: cuCheckpointProcessGetState returns CUDA_ERROR_NOT_SUPPORTED under every tool
initcheck|driver_api|exported_memory_imports_as_external_memory|initcheck does not follow memory imported as external memory (cuImportExternalMemory): the test's first copy into it fails with CUDA_ERROR_LAUNCH_FAILED, and every later context of the process fails the same way (memcheck, racecheck and synccheck run it)
synccheck|gpu_nccl|*|the binary runs only NCCL's kernels (its tests launch none of Chorus's), in which synccheck reports divergent barriers, and they run so slowly under it that the two-rank tests outlast any limit (memcheck, racecheck and initcheck run every test)
synccheck|gpu_cusolver|*|synccheck reports divergent barriers in cuBLAS's own triangular-solve kernel (cublasDtrsm_v2_64, called by cusolverDnDpotrs) and aborts it, so the tests' results are wrong; not Chorus's code (memcheck, racecheck and initcheck run it clean)
*|long_running|*|a bench (harness = false), not a test: it takes no harness arguments; its kernels are the runtime's small kernels, which the test binaries run under every tool
"
# Under 6 pairs at once on an H100 (2026-12-06), racecheck failed gpu_nvjpeg's
# batched_decode_of_images_of_several_sizes once (0 hazards; alone, the same pair passed, and
# initcheck ran it in 47 s): if it recurs, a `---- … stdout ----` line below says which check.
# The binaries that take minutes under a tool (on the H200, 2026-12-05: gpu_nccl 3-5 minutes
# under each, gpu_cudnn about 4 under initcheck, gpu_nvjpeg about 1): they start first and get
# SANITIZE_SLOW_TIMEOUT_S (480) instead of SANITIZE_TIMEOUT_S.
SLOW="gpu_nccl gpu_cudnn gpu_nvjpeg"
# Findings in NVIDIA's libraries, not in Chorus's code: BINARY|extended regex over the finding
# lines|what it is. A pair whose findings all match, and whose tests all pass, is `known`.
KNOWN="
gpu|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|the API error that unsupported_ptx_version_falls_back_to_cubin provokes on purpose
gpu|CUDA_ERROR_OUT_OF_MEMORY .* cuMemAlloc|allocation_errors asks for twice the device's memory on purpose
gpu|CUDA_ERROR_NOT_FOUND .* cuModuleGet(Global|Function)|globals_round_trip and function_attributes_and_occupancy ask for a global and a kernel that do not exist, on purpose
driver_api|CUDA_ERROR_UNKNOWN .* cuImportExternalSemaphore|/dev/null offered as a semaphore, refused on purpose
driver_api|CUDA_ERROR_JIT_COMPILER_NOT_FOUND .* cuLinkAddData|the driver's linker refusing LTO-IR, which the nvJitLink test expects
driver_api|CUDA_ERROR_INVALID_SOURCE .* cuLinkComplete|a link without -rdc of an unresolved extern function, refused on purpose
driver_api|Host API memory access error|initcheck tracks initialisation per process: the IPC test's child copies from memory its parent wrote
gpu_cudnn|Uninitialized __global__ memory read .* at void cudnn::|in cuDNN's own kernels (cudnn::detail::dgrad_engine, in the backward-data test); every result checks; over a million reports, about 4 minutes on the H200
gpu_nvjpeg|Uninitialized __global__ memory read .* at void nvjpeg::|in nvJPEG's own kernel nvjpeg::rgba2rgb (decoding to interleaved RGB); every image checks
gpu_nccl|cudaErrorNoKernelImageForDevice .* cudaFuncGetAttributes|NCCL asks for the attributes of kernels it did not build for this GPU, at communicator set-up
gpu_cusparse|Uninitialized __global__ memory read .* at void cub::[^ ]*DeviceScanKernel|in CUB's DeviceScanKernel inside cuSPARSE's SpGEMM and dense-to-sparse conversion (cusparseSpGEMM_*, cusparseDenseToSparse_*), on its own work buffers; every result checks
"
start=$(date +%s)
deadline=${SANITIZE_DEADLINE_S:-}
jobs=${SANITIZE_JOBS:-1}
results=$(mktemp -d)
not_run=()
skipped=()
# One tool over one binary; its lines go to $results/N (printed in order at the end).
# The SKIPS lines that apply to TOOL and BINARY.
skips_for() {  # TOOL BINARY
  echo "$SKIPS" | awk -F'|' -v t="$1" -v b="$2" \
    '$2 == b && ($1 == "*" || index("," $1 ",", "," t ",")) {print}'
}
sanitize() {  # N TOOL TEST-NAME EXE DIR LIMIT [--skip TEST]...
  local n=$1 tool=$2 name=$3 exe=$4 dir=$5 limit=$6 out rc errs res findings verdict known
  shift 6
  out=$(cd "$root/$dir" && CARGO_MANIFEST_DIR="$root/$dir" timeout "$limit" "$san" --tool "$tool" \
    --print-limit 20 "$root/.device/bin/$exe" --test-threads=1 "$@" 2>&1); rc=$?
  # The sum over every process's summary (a test's child processes run under the tool too and
  # print their own); not the "N errors were not printed" line.
  errs=$(echo "$out" | grep -v "were not printed" \
    | grep -oE "(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard)" \
    | awk '{n += $3; k++; kind = $1; what = $4}
           END {if (k) printf "%s SUMMARY: %d %s%s", kind, n, what, (k > 1 ? " (" k " processes)" : "")}')
  res=$(echo "$out" | grep -E "^test result" | tail -1)
  # Each finding's first line (the harness's `test NAME ... ` may come before it on the line),
  # with the kernel it was in (the next line, `at …`) when given.
  findings=$(echo "$out" | awk '
    match($0, /=+ (Invalid|Program hit|Uninitialized|Race|Barrier|Error|Host API)/) {
      if (f != "") print f; f = substr($0, RSTART); next }
    f != "" && /^=+ +at / { sub(/^=+ +at /, ""); print f " at " substr($0, 1, 120); f = ""; next }
    f != "" { print f; f = "" }
    END { if (f != "") print f }')
  known=$(echo "$KNOWN" | awk -F'|' -v b="$name" '$1 == b {print $2}' | paste -sd'|')
  if echo "$out" | grep -q "terminated before first instrumented API call" \
    && [[ "$res" == *"test result: ok."* ]]; then
    verdict="no CUDA"
  elif [ "$rc" = 0 ] && [[ "$errs" =~ \ 0\ (error|hazard) ]]; then
    verdict=clean
  elif [[ "$res" == *"test result: ok."* ]] && [ -n "$known" ] && [ -n "$findings" ] \
    && ! echo "$findings" | grep -vqE "$known"; then
    verdict="known: $(echo "$KNOWN" | awk -F'|' -v b="$name" '$1 == b {print $2 "|" $3}' |
      while IFS='|' read -r pattern why; do
        echo "$findings" | grep -qE "$pattern" && echo "$why"
      done | paste -sd';' | sed 's/;/; /g')"
  else
    verdict=FAILED
  fi
  { echo "$tool $name rc=$rc ${errs:-no summary} | $res | $verdict"
    [ -z "$findings" ] || echo "$findings" | sort | uniq -c | sort -rn | head -4
    echo "$out" | grep -E "^---- " | head -8
  } > "$results/$n"
}
n=0
for pass in slow rest; do  # the slow binaries' pairs first, so that none starts near the deadline
for tool in ${2:-memcheck racecheck synccheck initcheck}; do
  while IFS=$'\t' read -r exe dir is_test tname; do
    [ "$is_test" = "1" ] && [[ "$tname" =~ $pat ]] && [ "$tname" != cuda_fault ] || continue
    if [[ " $SLOW " == *" $tname "* ]]; then
      [ "$pass" = slow ] || continue
      limit=${SANITIZE_SLOW_TIMEOUT_S:-480}
    else
      [ "$pass" = rest ] || continue
      limit=${SANITIZE_TIMEOUT_S:-300}
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    if [ -n "$deadline" ]; then
      left=$((deadline - ($(date +%s) - start)))
      if [ "$left" -lt 10 ]; then not_run+=("$tool $tname"); continue; fi
      [ "$left" -lt "$limit" ] && limit=$left
    fi
    skip_args=()
    whole=""
    while IFS='|' read -r _ _ test why; do
      [ -n "$test" ] || continue
      if [ "$test" = "*" ]; then whole=$why; else skip_args+=(--skip "$test"); fi
      skipped+=("$tool $tname ${test/#\*/(every test)}: $why")
    done < <(skips_for "$tool" "$tname")
    [ -z "$whole" ] || continue
    n=$((n + 1))
    sanitize "$n" "$tool" "$tname" "$exe" "$dir" "$limit" "${skip_args[@]}" < /dev/null &
  done < .device/manifest.tsv
done
done
wait
for i in $(seq 1 "$n"); do cat "$results/$i"; done
for i in $(seq 1 "$n"); do head -1 "$results/$i"; done | awk -F' [|] ' '{print $NF}' \
  | sed 's/:.*//' | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s %s", (NR>1?", ":"verdicts: "), c, substr($0,2)} END {print ""}'
rm -rf "$results"
for line in "${skipped[@]}"; do echo "skipped: $line"; done
for pair in "${not_run[@]}"; do echo "not run: $pair"; done
