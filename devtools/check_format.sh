#!/usr/bin/env bash
# Format check for the tracked sources (the rules .editorconfig gives editors): no trailing
# whitespace, no CRLF, a final newline; tabs for indentation in C, headers and shell (alignment
# after the tabs is fine; a here-document in a script keeps its own language's indentation);
# spaces for indentation in meson files, as meson's own style; C and header lines at most 100
# columns, a tab counting 8; no two files under lib/ with one name. Prints file:line: what for
# each violation; exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files '*.c' '*.h' '*meson.build' 'meson_options.txt' '*.sh' '*.py')
[ "${#files[@]}" -gt 0 ] || exit 0

exec python3 - "${files[@]}" <<'PY'
import re
import sys

bad = 0


def report(path, line, what):
    global bad
    bad += 1
    print(f"{path}:{line}: {what}")


for path in sys.argv[1:]:
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        continue  # deleted in the worktree, not yet in the index
    if not data:
        continue
    is_c = path.endswith((".c", ".h"))
    is_sh = path.endswith(".sh")
    is_meson = path.endswith(("meson.build", "meson_options.txt"))
    heredoc = None  # a script's here-document terminator, while inside one
    if not data.endswith(b"\n"):
        report(path, data.count(b"\n") + 1, "no newline at end of file")
    for n, raw in enumerate(data.split(b"\n"), 1):
        if raw.endswith(b"\r"):
            report(path, n, "CRLF line ending")
            raw = raw[:-1]
        line = raw.decode("utf-8", "replace")
        if line != line.rstrip(" \t"):
            report(path, n, "trailing whitespace")
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if is_sh and heredoc is not None:
            if line.strip("\t") == heredoc:
                heredoc = None
        elif (is_c or is_sh) and indent.startswith(" ") and line.strip():
            # Spaces after tabs are alignment; so is a block comment's " *".
            if not (is_c and line.lstrip(" ").startswith("*")):
                report(path, n, "indented with spaces, not tabs")
        elif is_meson and "\t" in indent:
            report(path, n, "indented with tabs; meson files use spaces")
        if is_sh and heredoc is None:
            m = re.search(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1", line)
            if m:
                heredoc = m.group(2)
        if is_c:
            width = len(line.expandtabs(8))
            if width > 100:
                report(path, n, f"{width} columns, more than 100")

# One name, one file under lib/ (doc/design.md): a stack trace or a commit summary that
# names a file must not leave the reader to guess which library's it is.
by_name = {}
for path in sys.argv[1:]:
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "lib" and parts[2].endswith((".c", ".h")):
        by_name.setdefault(parts[2], []).append(path)
for name, paths in sorted(by_name.items()):
    if len(paths) > 1:
        report(paths[1], 1, f"{name} also in {paths[0]}: prefix it with its library's name")

if bad:
    print(f"check_format: {bad} violation(s); see .editorconfig", file=sys.stderr)
    sys.exit(1)
PY
