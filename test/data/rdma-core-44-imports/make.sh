#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Writes the lists in this folder from the Debian packages installed here: for every
# program and python module of rdmacm-utils, perftest and python3-pyverbs that imports
# from librdmacm, NAME.txt with every symbol it imports from libibverbs and librdmacm, one
# name@VERSION a line in byte order (readelf --dyn-syms: the undefined symbols of an
# IBVERBS_ or RDMACM_ version); NAME is the program's, or py_ and the module's dotted
# name (py_pyverbs.cmid). packages.list records the versions read. The old lists are
# removed first, so a program gone from the packages is gone from here.
# usage: make.sh [DIR]   (default: this folder)
set -euo pipefail
out=${1:-$(cd "$(dirname "$0")" && pwd)}
packages=(rdmacm-utils perftest python3-pyverbs)
site=/usr/lib/python3/dist-packages/

for p in "${packages[@]}" libibverbs1 librdmacm1; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || {
		echo "make.sh: $p is not installed" >&2
		exit 1
	}
done
rm -f "$out"/*.txt
dpkg-query -W "${packages[@]}" libibverbs1 librdmacm1 | LC_ALL=C sort >"$out/packages.list"
n=0
while read -r f; do
	[ -f "$f" ] && [ ! -L "$f" ] && readelf -h "$f" >/dev/null 2>&1 || continue # ELF files
	imports=$(readelf --dyn-syms -W "$f" 2>/dev/null |
		awk '$7 == "UND" && $8 ~ /@(IBVERBS|RDMACM)_/ { print $8 }' | LC_ALL=C sort -u)
	grep -q '@RDMACM_' <<<"$imports" || continue
	case $f in
	"$site"*.so)
		mod=${f#"$site"}
		mod=${mod%%.cpython-*}
		name=py_${mod//\//.}
		;;
	*) name=$(basename "$f") ;;
	esac
	printf '%s\n' "$imports" >"$out/$name.txt"
	n=$((n + 1))
done < <(dpkg -L "${packages[@]}" | LC_ALL=C sort -u)
echo "make.sh: $n programs and modules import from librdmacm; lists in $out"
