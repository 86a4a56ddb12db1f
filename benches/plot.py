#!/usr/bin/env python3
"""Draws BENCHMARKS.md's plot from bench_suite's --out file: for each workload, the fraction of
the hardware limit that Chorus and the hand-written CUDA C baseline reach. Bandwidth-bound
workloads are measured against the H200's 4.8 TB/s (the measured device-to-device copy is drawn as
a line); arithmetic-bound ones against the FP32 peak of 66.9 TFLOP/s (132 SMs x 128 FMA/clk x 2 x
1.98 GHz; cuBLAS SGEMM drawn as a line). Plain Python, no dependencies: writes an SVG.

    python3 benches/plot.py results.tsv benches/workloads.svg
"""
import math
import sys

HBM_TB_S = 4.8
FP32_TFLOP_S = 132 * 128 * 2 * 1.98e9 / 1e12

ORDER = ["vector-add", "reduction", "transpose", "diffuse0", "diffuse1", "scan", "sgemm", "nbody"]


def read(path):
    rows = {}
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            fields = dict(zip(header, line.rstrip("\n").split("\t")))
            rows[fields["name"]] = fields
    return rows


def limit(name, unit):
    return FP32_TFLOP_S if unit == "TFLOP/s" else HBM_TB_S


def svg(rows):
    bars = [(n, rows[n]) for n in ORDER if n in rows]
    width, height, left, top, bottom = 900, 420, 70, 40, 90
    plot_w, plot_h = width - left - 20, height - top - bottom
    slot = plot_w / max(len(bars), 1)
    y = lambda frac: top + plot_h * (1 - min(frac, 1.1) / 1.1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">Fraction of the H200 limit: 4.8 TB/s (memory-bound) or 66.9 TFLOP/s FP32 (sgemm, nbody)</text>']
    for tick in [0, 0.2, 0.4, 0.6, 0.8, 1.0]:
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{int(tick * 100)}%</text>')
    ceilings = []
    if "d2d-copy" in rows:
        ceilings.append((float(rows["d2d-copy"]["value"]) / HBM_TB_S, "device copy", "#888"))
    if "cublas-sgemm" in rows:
        ceilings.append((float(rows["cublas-sgemm"]["value"]) / FP32_TFLOP_S, "cuBLAS SGEMM", "#c60"))
    for frac, label, colour in ceilings:
        out.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(frac):.1f}" y2="{y(frac):.1f}" stroke="{colour}" stroke-dasharray="6 4"/>')
        out.append(f'<text x="{width - 22}" y="{y(frac) - 4:.1f}" text-anchor="end" fill="{colour}">{label} {frac * 100:.0f}%</text>')
    for i, (name, r) in enumerate(bars):
        lim = limit(name, r["unit"])
        x0 = left + i * slot + slot * 0.15
        w = slot * 0.33
        for j, (key, colour, label) in enumerate([("value", "#2a6fdb", "Chorus"), ("baseline_value", "#999", "CUDA C")]):
            v = float(r.get(key, "nan"))
            if math.isnan(v):
                continue
            frac = v / lim
            out.append(f'<rect x="{x0 + j * w:.1f}" y="{y(frac):.1f}" width="{w - 2:.1f}" height="{y(0) - y(frac):.1f}" fill="{colour}"/>')
            out.append(f'<text x="{x0 + j * w + w / 2:.1f}" y="{y(frac) - 3:.1f}" text-anchor="middle" font-size="10">{frac * 100:.0f}%</text>')
        out.append(f'<text x="{x0 + w:.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">{name}</text>')
        out.append(f'<text x="{x0 + w:.1f}" y="{y(0) + 30:.1f}" text-anchor="middle" font-size="10" fill="#555">{float(r["value"]):.2f} {r["unit"]}</text>')
    lx = left
    for colour, label in [("#2a6fdb", "Chorus (generated CUDA C, NVRTC)"), ("#999", "hand-written CUDA C (nvcc -O3 -arch=sm_90)")]:
        out.append(f'<rect x="{lx}" y="{height - 28}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="{height - 18}">{label}</text>')
        lx += 330
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[2], "w") as f:
        f.write(svg(read(sys.argv[1])))
