#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The plots in doc/bench are what devtools/plot_bench.py draws from the figures beside
them: each SVG is redrawn from its TSV and must be identical (a figure changed without
its plot, or the other way round, fails here), with one bar per row; and a malformed
file is refused with exit status 2. The gnuplot plots (NAME.cdf.tsv and NAME.curve.tsv,
drawn by devtools/plot_png.py as NAME.cdf.png and NAME.curve.png) are redrawn and compared
the same way when gnuplot is installed.

    check_plots.py ROOT
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def fail(msg):
    print("check_plots: " + msg)
    sys.exit(1)


def main(root):
    script = os.path.join(root, "devtools", "plot_bench.py")
    tsvs = sorted(t for t in glob.glob(os.path.join(root, "doc", "bench", "*.tsv"))
                  if not t.endswith((".cdf.tsv", ".curve.tsv")))
    if not tsvs:
        fail("no doc/bench/*.tsv")
    for tsv in tsvs:
        svg_path = tsv[:-4] + ".svg"
        drawn = subprocess.run([sys.executable, script, tsv], capture_output=True, text=True)
        if drawn.returncode != 0:
            fail(f"{tsv}: plot_bench exit {drawn.returncode}: {drawn.stderr.strip()}")
        if not os.path.exists(svg_path):
            fail(f"{svg_path} missing: draw it with plot_bench.py")
        with open(svg_path, encoding="utf-8") as f:
            if f.read() != drawn.stdout:
                fail(f"{svg_path} is not what {os.path.basename(tsv)} draws: redraw it")
        rows = [l for l in open(tsv, encoding="utf-8")
                if l.strip() and not l.lstrip().startswith("#")]
        bars = [e for e in ET.fromstring(drawn.stdout).iter()
                if e.tag.endswith("rect") and e.get("class") == "bar"]
        if len(bars) != len(rows):
            fail(f"{svg_path}: {len(bars)} bars for {len(rows)} rows")
        print(f"ok {os.path.relpath(svg_path, root)}: {len(rows)} rows")
    for tsv in sorted(glob.glob(os.path.join(root, "doc", "bench", "*.cdf.tsv")) +
                      glob.glob(os.path.join(root, "doc", "bench", "*.curve.tsv"))):
        png = tsv[:-4] + ".png"
        if not os.path.exists(png):
            fail(f"{png} missing: draw it with plot_png.py draw")
        if not shutil.which("gnuplot"):
            print(f"{os.path.relpath(png, root)}: not redrawn (no gnuplot: gnuplot-nox)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            # Drawn from a copy at the same relative path: the script names its input.
            drawn = os.path.join(tmp, "drawn.png")
            done = subprocess.run([sys.executable, os.path.join(root, "devtools", "plot_png.py"),
                                   "draw", os.path.relpath(tsv, root), drawn],
                                  capture_output=True, text=True, cwd=root)
            if done.returncode != 0:
                fail(f"{tsv}: plot_png exit {done.returncode}: {done.stderr.strip()}")
            with open(drawn, "rb") as a, open(png, "rb") as b:
                if a.read() != b.read():
                    fail(f"{png} is not what {os.path.basename(tsv)} draws: redraw it")
        print(f"ok {os.path.relpath(png, root)}")
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as bad:
        bad.write("B9\ttoo few columns\t1\n")
    refused = subprocess.run([sys.executable, script, bad.name], capture_output=True,
                             text=True)
    os.unlink(bad.name)
    if refused.returncode != 2 or "columns" not in refused.stderr:
        fail(f"a malformed file: exit {refused.returncode}, {refused.stderr.strip()!r}")
    print("ok a malformed file is refused")
    with tempfile.NamedTemporaryFile("w", suffix=".curve.tsv", delete=False) as bad:
        bad.write("size\tcurve\tmin\tmax\n64\t1\t1\t1\n")
    refused = subprocess.run([sys.executable, os.path.join(root, "devtools", "plot_png.py"),
                              "draw", bad.name, bad.name + ".png"], capture_output=True,
                             text=True)
    os.unlink(bad.name)
    if refused.returncode != 2 or "xlabel" not in refused.stderr or \
            os.path.exists(bad.name + ".png"):
        fail(f"a curve without its labels: exit {refused.returncode}, "
             f"{refused.stderr.strip()!r}")
    print("ok a curve table without its labels is refused")


if __name__ == "__main__":
    main(sys.argv[1])
