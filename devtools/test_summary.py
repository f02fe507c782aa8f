#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sums meson test logs into one closing line.

Usage: test_summary.py BUILD/meson-logs/testlog.json...

A Criterion binary counts as the number of tests in its "Synthesis" line; any other test
(a script) counts as one. Prints a line per log and, last, "tests: N passed, N failed,
N skipped". Exits 1 when anything failed or a log is missing.
"""
import json
import re
import sys

SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")


def summarise(path):
    passed = failed = skipped = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            m = SYNTH.search(out)
            ok = t["result"] in ("OK", "EXPECTEDFAIL")
            if t["result"] == "SKIP":
                skipped += 1
            elif m:
                tested, passing, failing, crashing = map(int, m.groups())
                passed += passing
                failed += failing + crashing
                # A binary that died outside Criterion's accounting still failed.
                if not ok and failing + crashing == 0:
                    failed += 1
            elif ok:
                passed += 1
            else:
                failed += 1
    return passed, failed, skipped


def main(paths):
    total = [0, 0, 0]
    status = 0
    for p in paths:
        try:
            r = summarise(p)
        except OSError as e:
            print(f"{p}: {e}")
            status = 1
            continue
        print(f"{p}: {r[0]} passed, {r[1]} failed, {r[2]} skipped")
        total = [a + b for a, b in zip(total, r)]
    print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if status or total[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
