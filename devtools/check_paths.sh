#!/usr/bin/env bash
# The checkout stands alone (doc/design.md): no tracked file refers to a path outside it.
# Prints file:line: what, and exits 1, for each line of a tracked text file (binary files,
# such as the captures, are skipped) that names
#   - a directory beside the checkout called shared, reached by parent steps (in a path, a
#     meson join or a shell cd), or that directory's tools, pcaps or design folders;
#   - a path of one machine: in a top-level folder named work, a file in /root, /home, /mnt,
#     /media or /Users, or an absolute path into the build tree of a checkout somewhere
#     (through build*/lib, app, drivers, test or devtools);
#   - in meson files: the parent of the source root, or an option default that is absolute
#     or climbs out with parent steps;
# and for each tracked symbolic link whose target is absolute or leaves the checkout.
# System paths (/usr, /etc, /sys, /proc, /dev, /run, /var, ...) and /tmp (scratch the scripts
# make, and documented work directories such as the VM image's) are not a machine's own.
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - <<'PY'
import os
import re
import subprocess
import sys

files = subprocess.run(["git", "ls-files", "-z"], check=True,
                       capture_output=True).stdout.decode().split("\0")
files = [f for f in files if f]

# A parent step ("..") as a whole path component, and a component named shared that a path
# or a quoted meson string leads to: both on one line mean the line climbs to the sibling.
PARENT = re.compile(r"(?<![\w.])\.\.(?![\w.])")
SHARED = re.compile(r"(?<=[/'\"])shared(?=$|[/'\"\s)}:,;`])")
SHARED_DIRS = re.compile(r"(?<![\w.-])shared/(?:tools|pcaps|design)(?![\w.-])")
# An absolute path: a slash not inside a word, a URL, a variable's expansion or ~/.
ABS = re.compile(r"(?<![\w.~$}/\\-])/[\w.+@%-]+(?:/[\w.+@%-]*)*")
MACHINE_ROOTS = {"work", "root", "home", "mnt", "media", "Users"}
BUILD_TREE = re.compile(r"/build[\w.-]*/(?:lib|app|drivers|test|devtools)/")
# meson: the source root's parent, and an option's default string.
ABOVE_ROOT = re.compile(
    r"source_root\(\)\s*(?:/\s*'\.\.'|\+\s*'/\.\.)"
    r"|join_paths\(\s*meson\.\w*source_root\(\)\s*,\s*'\.\.'")
OPTION_DEFAULT = re.compile(r"\bvalue\s*:\s*'([^']*)'")

bad = 0


def report(path, line, what):
    global bad
    bad += 1
    print(f"{path}:{line}: {what}" if line else f"{path}: {what}")


def machine_path(token):
    """Why an absolute path belongs to one machine, or None."""
    parts = token.split("/")
    # /root and /home themselves are where homes are (HOME=/root in a chroot); a file in
    # one is someone's. A top-level work folder is no standard directory at all.
    if parts[1] == "work" or (parts[1] in MACHINE_ROOTS and len(parts) > 2 and parts[2]):
        return f"a path of the machine that wrote it ({token})"
    if BUILD_TREE.search(token + "/"):
        return f"a checkout's build tree on some machine ({token})"
    return None


for path in files:
    if os.path.islink(path):
        target = os.readlink(path)
        inside = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if os.path.isabs(target) or inside == ".." or inside.startswith("../"):
            report(path, None, f"symbolic link to {target}, outside the checkout")
        continue
    try:
        data = open(path, "rb").read()
    except (FileNotFoundError, IsADirectoryError):
        continue  # deleted in the worktree, or a submodule
    if b"\0" in data[:8192]:
        continue  # binary, as git decides it
    is_meson = path.endswith(("meson.build", "meson_options.txt", "meson.options"))
    is_option = path.endswith(("meson_options.txt", "meson.options"))
    for n, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
        if PARENT.search(line) and SHARED.search(line):
            report(path, n, "the directory beside the checkout called shared")
        elif SHARED_DIRS.search(line):
            report(path, n, f"{SHARED_DIRS.search(line).group(0)}, not in the checkout")
        for m in ABS.finditer(line):
            why = machine_path(m.group(0))
            if why:
                report(path, n, why)
        if is_meson and ABOVE_ROOT.search(line):
            report(path, n, "the parent of the source root, outside the checkout")
        if is_option:
            for m in OPTION_DEFAULT.finditer(line):
                value = m.group(1)
                if value.startswith("/") or PARENT.match(value):
                    report(path, n, f"option default {value!r}: absolute or above the "
                           "checkout (leave it empty and compute it in meson.build)")

if bad:
    print(f"check_paths: {bad} reference(s) outside the checkout", file=sys.stderr)
    sys.exit(1)
print(f"check_paths: {len(files)} tracked files refer to nothing outside the checkout")
PY
