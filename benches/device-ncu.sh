#!/usr/bin/env bash
# Nsight Compute over one staged example or bench on the GPU machine, from the repository root
# after .device/ is in place: the kernels whose names match KERNEL-REGEX, COUNT launches, with
# the sections that say where a kernel's time goes (speed of light, warp stall reasons,
# instruction mix, shared-memory bank conflicts, occupancy). The clocks are left alone
# (`--clock-control none`, as the device notes ask). Details as CSV in $OUT/ncu-NAME.csv, the
# report in $OUT/ncu-NAME.ncu-rep; a short table of the chosen metrics on stdout.
#
#   OUT=$OUT bash benches/device-ncu.sh hgemm '^hgemm' 8 --iterations 1
set -u
name=${1:?usage: device-ncu.sh NAME KERNEL-REGEX COUNT [ARGS...]}; regex=${2:?}; count=${3:?}
shift 3
OUT=${OUT:-$(mktemp -d)}
bash .device/run.sh no_such_test_filter >/dev/null 2>&1   # unpack and link as run.sh does
export CUDA_PATH=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | tail -1)
dir=$(awk -F'\t' -v n="$name" '$4==n {print $2; exit}' .device/manifest.tsv)
exe=$(awk -F'\t' -v n="$name" '$4==n {print $1; exit}' .device/manifest.tsv)
[ -n "$exe" ] || { echo "no staged binary named $name"; exit 2; }
root=$(pwd)
export LD_LIBRARY_PATH="$root/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sections="--section SpeedOfLight --section WarpStateStats --section InstructionStats \
  --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
  --section ComputeWorkloadAnalysis --section SchedulerStats"
(cd "$root/$dir" && CARGO_MANIFEST_DIR="$root/$dir" "$ncu" --clock-control none \
  -k "regex:$regex" --launch-count "$count" $sections -f -o "$OUT/ncu-$name" \
  "$root/.device/bin/$exe" "$@") > "$OUT/ncu-$name.log" 2>&1
echo "ncu exit $? (log: ncu-$name.log)"; tail -n 5 "$OUT/ncu-$name.log"
"$ncu" --import "$OUT/ncu-$name.ncu-rep" --page details --csv > "$OUT/ncu-$name.csv" 2>&1
python3 - "$OUT/ncu-$name.csv" <<'PY'
import csv, sys, collections
want = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Registers Per Thread",
        "Achieved Occupancy", "Issue Slots Busy", "Issued Warp Per Scheduler",
        "No Eligible", "Warp Cycles Per Issued Instruction", "Shared Memory"]
rows = collections.OrderedDict()
with open(sys.argv[1]) as f:
    lines = f.readlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), 0)  # skip warnings
for r in csv.DictReader(lines[start:]):
    key = (r.get("ID"), r.get("Kernel Name", "")[:40])
    m = r.get("Metric Name", "")
    if any(w in m for w in want) or "stall" in m.lower() or "Bank" in m:
        rows.setdefault(key, []).append(f"{m}={r.get('Metric Value')} {r.get('Metric Unit')}")
for (i, k), ms in rows.items():
    print(f"--- {i} {k}")
    for m in ms[:40]:
        print("   ", m)
PY
# Stall reasons: the raw page's warp-state ratios (cycles a warp spent stalled per issued
# instruction, by reason), the five largest for each kernel.
"$ncu" --import "$OUT/ncu-$name.ncu-rep" --page raw --csv > "$OUT/ncu-$name-raw.csv" 2>&1
python3 - "$OUT/ncu-$name-raw.csv" <<'PY'
import csv, sys
# Lines before the header (warnings, "==PROF==") are skipped: the header starts with "ID".
rows = list(csv.reader(open(sys.argv[1])))
rows = rows[next((i for i, r in enumerate(rows) if r and r[0] == "ID"), 0):]
head, body = rows[0], rows[2:]
stall = [i for i, h in enumerate(head)
         if h.startswith("smsp__average_warps_issue_stalled_") and h.endswith("_per_issue_active.ratio")]
name = head.index("Kernel Name") if "Kernel Name" in head else None
def number(text):  # "1,234.5", "n/a" or "" in Nsight Compute's CSV
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0
for r in body:
    if len(r) != len(head):
        continue
    vals = sorted(((number(r[i]), head[i][34:-23]) for i in stall), reverse=True)
    print((r[name][:40] if name is not None else "?"), " ".join(f"{n}={v:.2f}" for v, n in vals[:6]))
PY
