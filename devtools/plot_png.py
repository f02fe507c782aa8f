#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The figures test/bench/two_hosts.sh keeps (PLOT_DIR) as tables, and each table drawn
with gnuplot (Debian's gnuplot-nox) as a PNG beside it.

    devtools/plot_png.py cdf-table PLOT_DIR KEY=TITLE... > NAME.cdf.tsv
    devtools/plot_png.py curve-table PLOT_DIR XLABEL YLABEL LOGSCALE KEY=TITLE... \\
        > NAME.curve.tsv
    devtools/plot_png.py draw NAME.cdf.tsv|NAME.curve.tsv PNG

cdf-table: for each KEY, PLOT_DIR/KEY.cdf holds one line per repetition of 101
comma-separated half round trips in us (percentiles 0..100); the column is their median
per percentile. The first line names the columns: "percentile", then each TITLE.
curve-table: for each KEY, PLOT_DIR/KEY.pts holds lines "X VALUE", one per repetition of
a point; each curve is three columns, the median of the values at each X and their
minimum and maximum (the spread of the repetitions), "-" where a curve has no point. The
table starts with "# xlabel", "# ylabel" and "# logscale" (x, y, xy or none) lines, then
the column names: XLABEL, then "TITLE (N runs)", "min", "max" per curve.
draw: a CDF table as one line per column, latency (log scale) against percentile; a curve
table as one line per curve with its min-max range as error bars. Exit status: 0; 1 no
gnuplot or it failed; 2 a malformed input, with a message.
"""
import os
import statistics
import subprocess
import sys


def die(msg, status=2):
    print("plot_png: " + msg, file=sys.stderr)
    sys.exit(status)


def read_lines(path, parse):
    try:
        with open(path) as f:
            return [parse(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")


def cdf_table(plot_dir, pairs):
    cols, titles = [], []
    for pair in pairs:
        key, _, title = pair.partition("=")
        path = os.path.join(plot_dir, key + ".cdf")
        reps = read_lines(path, lambda line: [float(v) for v in line.split(",")])
        if not reps or any(len(r) != 101 for r in reps):
            die(f"{path}: want lines of 101 percentiles")
        cols.append([statistics.median(r[q] for r in reps) for q in range(101)])
        titles.append(f"{title or key} ({len(reps)} runs)")
    print("\t".join(["percentile"] + titles))
    for q in range(101):
        print("\t".join([str(q)] + [f"{c[q]:.2f}" for c in cols]))


def curve_table(plot_dir, xlabel, ylabel, logscale, pairs):
    if logscale not in ("x", "y", "xy", "none"):
        die(f"logscale {logscale!r}: want x, y, xy or none")
    curves, titles, xs = [], [], set()
    for pair in pairs:
        key, _, title = pair.partition("=")
        path = os.path.join(plot_dir, key + ".pts")
        pts = read_lines(path, lambda line: [float(v) for v in line.split()])
        if not pts or any(len(p) != 2 for p in pts):
            die(f"{path}: want lines of \"X VALUE\"")
        by_x = {}
        for x, v in pts:
            by_x.setdefault(x, []).append(v)
        xs.update(by_x)
        curves.append(by_x)
        runs = max(len(v) for v in by_x.values())
        titles.append(f"{title or key} ({runs} run{'' if runs == 1 else 's'})")
    print(f"# xlabel\t{xlabel}\n# ylabel\t{ylabel}\n# logscale\t{logscale}")
    print("\t".join([xlabel] + [c for t in titles for c in (t, "min", "max")]))
    for x in sorted(xs):
        row = [f"{x:g}"]
        for by_x in curves:
            v = by_x.get(x)
            row += [f"{statistics.median(v):.4g}", f"{min(v):.4g}", f"{max(v):.4g}"] \
                if v else ["-", "-", "-"]
        print("\t".join(row))


def gnuplot(script):
    try:
        done = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    except FileNotFoundError:
        die("no gnuplot (apt-get install gnuplot-nox)", 1)
    if done.returncode != 0 or done.stderr.strip():
        die("gnuplot: " + done.stderr.strip(), 1)


def draw_cdf(tsv, png):
    with open(tsv) as f:
        titles = f.readline().rstrip("\n").split("\t")[1:]
    if not titles:
        die(f"{tsv}: no columns")
    lines = ", ".join(
        f"'{tsv}' using {i + 2}:1 with lines linewidth 2 title '{t}'"
        for i, t in enumerate(titles))
    gnuplot(f"""set terminal pngcairo size 900,520 font 'sans,11'
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
""")


def draw_curve(tsv, png):
    meta = {}
    with open(tsv) as f:
        for line in f:
            if not line.startswith("# "):
                break
            name, _, value = line[2:].rstrip("\n").partition("\t")
            meta[name] = value
        cols = line.rstrip("\n").split("\t")
    if set(meta) != {"xlabel", "ylabel", "logscale"} or len(cols) < 4 or (len(cols) - 1) % 3:
        die(f"{tsv}: want # xlabel, # ylabel, # logscale, then X and triples of columns")
    log = "" if meta["logscale"] == "none" else f"set logscale {meta['logscale']} 2"
    if "x" in meta["logscale"]:
        log += "\nset format x '%.0b%B'"  # 1, 2, ... 512, 1Ki, 2Ki, ... 1Mi
    plots = ", ".join(
        f"'{tsv}' using 1:{2 + 3 * i}:{3 + 3 * i}:{4 + 3 * i} with yerrorlines "
        f"linewidth 2 pointtype {4 + 2 * i} title '{cols[1 + 3 * i]}'"
        for i in range((len(cols) - 1) // 3))
    gnuplot(f"""set terminal pngcairo size 900,520 font 'sans,11'
set output '{png}'
set datafile separator '\\t'
set datafile missing '-'
set datafile commentschars '#'
set termoption noenhanced
set offsets graph 0.02, graph 0.02, 0, 0
{log}
set xlabel '{meta['xlabel']}'
set ylabel '{meta['ylabel']}'
set grid
set key bottom right
plot {plots}
""")


if __name__ == "__main__":
    a = sys.argv
    if len(a) >= 4 and a[1] == "cdf-table":
        cdf_table(a[2], a[3:])
    elif len(a) >= 7 and a[1] == "curve-table":
        curve_table(a[2], a[3], a[4], a[5], a[6:])
    elif len(a) == 4 and a[1] == "draw" and a[2].endswith(".cdf.tsv"):
        draw_cdf(a[2], a[3])
    elif len(a) == 4 and a[1] == "draw" and a[2].endswith(".curve.tsv"):
        draw_curve(a[2], a[3])
    else:
        die(__doc__.strip().split("\n\n")[1])
