#!/usr/bin/env bash
# Carry only some staged binaries to the GPU machine. `device-stage --examples --benches` stages
# every binary of the workspace (2026-12-04: 133 binaries, 715 MiB, 175 MiB compressed), past the
# device tool's 64 MiB carry limit; this script packs the ones whose Cargo target name matches a
# regular expression into a folder with .device/'s layout. It compresses with `xz -9e`, whose
# 64 MiB window spans several binaries: they share most of their code, so 30 binaries (225 MiB)
# pack into 19 MiB, against 52 MiB for 22 of them at xz -6 (about 2 minutes on 2 cores):
#
#   ../shared/tools/device-stage --examples --benches
#   bash benches/device-subset.sh .devA '^(gpu_.*|gpu|corpus_gpu)$'     # prints count and size
#
# and on the GPU machine (carry: [".devA", "benches"]):
#
#   rm -rf .device && mv .devA .device && bash benches/device-tests.sh
#
# DEST must be ignored by git (.git/info/exclude) or it travels with every call.
set -euo pipefail
dest=${1:?usage: device-subset.sh DEST REGEX}; pat=${2:?usage: device-subset.sh DEST REGEX}
src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
if [ -f .device/binaries.tar.xz ]; then tar -C "$src" -xJf .device/binaries.tar.xz; else cp -r .device/bin .device/lib "$src/"; fi
rm -rf "$dest"; mkdir -p "$dest/bin"
cp .device/run.sh .device/build-root "$dest/"
awk -F'\t' -v p="$pat" '$4 ~ p' .device/manifest.tsv > "$dest/manifest.tsv"
# Only the links to binaries that travel (run.sh would otherwise fail to link the others).
awk -F'\t' 'NR == FNR { staged[$1]; next } $1 in staged' "$dest/manifest.tsv" .device/links.tsv > "$dest/links.tsv"
cut -f1 "$dest/manifest.tsv" | while read -r b; do cp "$src/bin/$b" "$dest/bin/"; done
cp -r "$src/lib" "$dest/lib"
tar -C "$dest" -cf - bin lib | xz -T0 -9e > "$dest/binaries.tar.xz"
rm -rf "$dest/bin" "$dest/lib"
echo "$(wc -l < "$dest/manifest.tsv") binaries, $(du -sm "$dest" | cut -f1) MiB in $dest"
