#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the Debian package of the committed tree (HEAD) with dpkg-buildpackage, in a
# scratch copy so that nothing lands in the checkout, and puts the .deb in OUTDIR.
#   devtools/build_deb.sh OUTDIR      (needs debhelper and the build dependencies of
#                                      debian/control; prints the .deb's path)
# Exit: 0 built, 1 failed (the build log is OUTDIR/build.log), 2 usage.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 1 ]; then
	sed -n '3,7p' "$0" >&2
	exit 2
fi
out=$1
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/uroce-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/uroce"
git -C "$top" archive HEAD | tar -x -C "$work/uroce" || exit 1
if ! (cd "$work/uroce" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
	echo "build_deb: dpkg-buildpackage failed; the end of $out/build.log:" >&2
	tail -n 30 "$out/build.log" >&2
	exit 1
fi
cp "$work"/*.deb "$out"/ || exit 1
ls "$out"/uroce_*.deb
