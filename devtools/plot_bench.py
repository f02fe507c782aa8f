#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws benchmark figures against their baselines as an SVG bar chart, with no package
beyond Python itself (so that anyone who can run the benchmarks can redraw the plots).

    devtools/plot_bench.py FIGURES.tsv > PLOT.svg

FIGURES.tsv, tab-separated, '#' starts a comment, one row per figure:
    id  what  uroce  baseline  unit  better  target  baseline_name
- uroce, baseline: the two figures of one run, in unit (a positive number each);
- better: "lower" (latency, CPU) or "higher" (rates, bandwidth);
- target: the target as a ratio uroce / baseline, or "-" for none;
- baseline_name: what the baseline is ("kernel UDP busy-poll", "raw DPDK", ...).

Each bar is uroce / baseline on a logarithmic axis (1x in the middle), green when it
meets its target, red when it does not, grey without one; the target is a black tick.
Exit status: 0, or 2 with a message for a malformed file.
"""
import math
import sys
from xml.sax.saxutils import escape

ROW_H, TOP, LEFT, WIDTH, RIGHT = 34, 56, 430, 420, 200
LO, HI = 0.1, 10.0  # the axis, as ratios


def die(msg):
    print("plot_bench: " + msg, file=sys.stderr)
    sys.exit(2)


def parse(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 8:
                die(f"{path}:{n}: {len(cols)} columns, want 8")
            rid, what, uroce, base, unit, better, target, base_name = cols
            try:
                uroce, base = float(uroce), float(base)
                target = None if target == "-" else float(target)
            except ValueError:
                die(f"{path}:{n}: a figure that is not a number")
            if uroce <= 0 or base <= 0 or (target is not None and target <= 0):
                die(f"{path}:{n}: figures and targets must be positive")
            if better not in ("lower", "higher"):
                die(f"{path}:{n}: better is 'lower' or 'higher', not '{better}'")
            rows.append(dict(id=rid, what=what, uroce=uroce, base=base, unit=unit,
                             better=better, target=target, base_name=base_name))
    if not rows:
        die(f"{path}: no rows")
    return rows


def x_of(ratio):
    r = min(max(ratio, LO), HI)
    return LEFT + WIDTH * (math.log10(r) - math.log10(LO)) / (math.log10(HI) - math.log10(LO))


def fmt(v):
    return f"{v:.3g}"


def meets(row, ratio):
    if row["target"] is None:
        return None
    return ratio <= row["target"] if row["better"] == "lower" else ratio >= row["target"]


def svg(rows, title):
    h = TOP + ROW_H * len(rows) + 40
    w = LEFT + WIDTH + RIGHT
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
           '<text x="10" y="38" fill="#444">bar: uroce / baseline of the same run, log scale;'
           ' tick: target; green met, red not met</text>']
    for r in (0.1, 0.2, 0.5, 1, 2, 5, 10):
        x = x_of(r)
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" '
                   f'y2="{TOP + ROW_H * len(rows)}" stroke="{"#000" if r == 1 else "#ddd"}"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ROW_H * len(rows) + 16}" '
                   f'text-anchor="middle">{fmt(r)}x</text>')
    for i, row in enumerate(rows):
        y = TOP + ROW_H * i
        ratio = row["uroce"] / row["base"]
        ok = meets(row, ratio)
        color = "#999" if ok is None else ("#2a9d3a" if ok else "#d0342c")
        x0, x1 = sorted((x_of(1), x_of(ratio)))
        out.append(f'<text x="{LEFT - 8}" y="{y + 14}" text-anchor="end">'
                   f'{escape(row["id"] + " " + row["what"])}</text>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 27}" text-anchor="end" fill="#666" '
                   f'font-size="10">{escape(row["better"])} is better; vs '
                   f'{escape(row["base_name"])}</text>')
        out.append(f'<rect class="bar" x="{x0:.1f}" y="{y + 6}" width="{max(x1 - x0, 1):.1f}" '
                   f'height="{ROW_H - 14}" fill="{color}"/>')
        if row["target"] is not None:
            xt = x_of(row["target"])
            out.append(f'<line x1="{xt:.1f}" y1="{y + 2}" x2="{xt:.1f}" y2="{y + ROW_H - 4}" '
                       'stroke="black" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + WIDTH + 8}" y="{y + 14}">{fmt(ratio)}x</text>')
        out.append(f'<text x="{LEFT + WIDTH + 8}" y="{y + 27}" fill="#666" font-size="10">'
                   f'{fmt(row["uroce"])} vs {fmt(row["base"])} {escape(row["unit"])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 2:
        die("usage: plot_bench.py FIGURES.tsv > PLOT.svg")
    title = "uroce against its baselines"
    with open(argv[1], encoding="utf-8") as f:
        first = f.readline()
    if first.startswith("# title: "):
        title = first[len("# title: "):].strip()
    sys.stdout.write(svg(parse(argv[1]), title))


if __name__ == "__main__":
    main(sys.argv)
