#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sums meson test logs into one closing line.

Usage: test_summary.py [BUILD/meson-logs/LOG.json | failed:WHAT]...

A failed:WHAT argument is a step outside meson that failed (the format check, the fuzzing
run): it counts as one failure, named, so that the closing line never says 0 failed for a
run that failed.

A Criterion binary counts as the number of tests in its "Synthesis" line; any other test
(a script) counts as one. Prints, for each test that did not pass, its name, result and
the last lines of its output (CI keeps only the tail of a run's output, so a failure must
be named here, not only where meson printed it): first its lines that say what
failed (an assertion, a sanitizer report) with the indented lines under each, then its
tail; then a line per log and, last, "tests: N passed, N failed, N skipped". Exits 1 when
anything failed or a log is missing.
"""
import json
import re
import sys

TAIL_LINES = 40
# Lines that say what failed even when the tail is a leak report or a teardown log.
KEY_LINE = re.compile(r"Assertion Failed|\[FAIL\]|CRASH|ERROR: \w+Sanitizer|runtime error:|FAILED")
KEY_LINES = 60
SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")


def key_lines(lines):
    """The lines that say what failed, each with the indented lines right after it (the
    details a test prints under a failure: counters, the peer's view)."""
    keys = []
    in_key = False
    for line in lines:
        if KEY_LINE.search(line):
            in_key = True
        elif not (in_key and line[:1].isspace()):
            in_key = False
        if in_key:
            keys.append(line)
    return keys


def summarise(path, failures):
    """Counts one log's tests; appends (name, result, duration, output) of each failure."""
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
            if not ok and t["result"] != "SKIP" or m and int(m.group(3)) + int(m.group(4)):
                failures.append((t["name"], t["result"], t.get("duration", 0.0), out))
    return passed, failed, skipped


def main(paths):
    total = [0, 0, 0]
    status = 0
    lines = []
    for p in paths:
        if p.startswith("failed:"):
            lines.append(f"{p[7:]}: failed")
            total[1] += 1
            continue
        failures = []
        try:
            r = summarise(p, failures)
        except OSError as e:
            lines.append(f"{p}: {e}")
            status = 1
            continue
        for name, result, duration, out in failures:
            all_lines = out.rstrip("\n").split("\n")
            keys = key_lines(all_lines[:-TAIL_LINES])
            print(f"==== {p}: {name}: {result} after {duration:.1f} s")
            if keys:
                print("\n".join("  ! " + line for line in keys[:KEY_LINES]))
            print("\n".join("  | " + line for line in all_lines[-TAIL_LINES:]))
        lines.append(f"{p}: {r[0]} passed, {r[1]} failed, {r[2]} skipped")
        lines.extend(f"  not passed: {name} ({result})" for name, result, _, _ in failures)
        total = [a + b for a, b in zip(total, r)]
    print("\n".join(lines))
    print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if status or total[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
