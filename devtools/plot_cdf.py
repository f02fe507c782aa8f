#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Latency CDFs: the percentiles that test/bench/two_hosts.sh keeps (CDF_DIR) as a table,
and the table drawn with gnuplot (Debian's gnuplot-nox) as a PNG.

    devtools/plot_cdf.py table CDF_DIR KEY=TITLE... > latency_cdf.tsv
    devtools/plot_cdf.py draw latency_cdf.tsv latency_cdf.png

table: for each KEY, CDF_DIR/KEY.cdf holds one line per repetition of 101 comma-separated
half round trips in us (percentiles 0..100); the column is their median per percentile.
The TSV's first line names the columns: "percentile", then each TITLE.
draw: one line per column, latency (log scale) against percentile. Exit status: 0; 1 no
gnuplot or it failed; 2 a malformed input, with a message.
"""
import os
import statistics
import subprocess
import sys


def die(msg, status=2):
    print("plot_cdf: " + msg, file=sys.stderr)
    sys.exit(status)


def table(cdf_dir, pairs):
    cols, titles = [], []
    for pair in pairs:
        key, _, title = pair.partition("=")
        path = os.path.join(cdf_dir, key + ".cdf")
        try:
            reps = [[float(v) for v in line.split(",")] for line in open(path) if line.strip()]
        except (OSError, ValueError) as e:
            die(f"{path}: {e}")
        if not reps or any(len(r) != 101 for r in reps):
            die(f"{path}: want lines of 101 percentiles")
        cols.append([statistics.median(r[q] for r in reps) for q in range(101)])
        titles.append(f"{title or key} ({len(reps)} runs)")
    print("\t".join(["percentile"] + titles))
    for q in range(101):
        print("\t".join([str(q)] + [f"{c[q]:.2f}" for c in cols]))


def draw(tsv, png):
    with open(tsv) as f:
        titles = f.readline().rstrip("\n").split("\t")[1:]
    if not titles:
        die(f"{tsv}: no columns")
    lines = ", ".join(
        f"'{tsv}' using {i + 2}:1 with lines linewidth 2 title '{t}'"
        for i, t in enumerate(titles))
    script = f"""set terminal pngcairo size 900,520 font 'sans,11'
set output '{png}'
set datafile separator '\\t'
set key autotitle columnhead
set logscale x
set xlabel 'half round trip (us), 8 B / 64 B ping-pong over veth'
set ylabel 'percentile'
set yrange [0:100]
set grid
set key bottom right
plot {lines}
"""
    try:
        done = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    except FileNotFoundError:
        die("no gnuplot (apt-get install gnuplot-nox)", 1)
    if done.returncode != 0 or done.stderr.strip():
        die("gnuplot: " + done.stderr.strip(), 1)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "draw":
        draw(sys.argv[2], sys.argv[3])
    else:
        die(__doc__.strip().split("\n\n")[1])
