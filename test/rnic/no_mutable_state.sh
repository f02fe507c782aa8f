#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# lib/rnic keeps all its state in the struct uroce_rnic it is given, and uroced in the
# struct uroced that main.c holds (the archive of its other files, app/uroced/meson.build):
# no object of the archive may have writable data (.data, .bss or their variants,
# thread-local ones included). Read-only data and .data.rel.ro (const tables of pointers,
# which a shared object relocates once at load) are fine.
#   no_mutable_state.sh ARCHIVE
set -euo pipefail

archive=${1:?usage: no_mutable_state.sh ARCHIVE}
[[ -f $archive ]] || { echo "no such archive: $archive" >&2; exit 2; }
# objdump -h: "Idx Name Size VMA LMA File-off Algn", one line per section.
bad=$(objdump -h "$archive" | awk '
	/file format/ { obj = $1 }
	$2 ~ /^\.(data|bss|tdata|tbss)(\.|$)/ && $2 !~ /^\.data\.rel\.ro/ && $3 !~ /^0+$/ {
		print obj " " $2 " 0x" $3 " bytes"
	}')
objects=$(objdump -h "$archive" | grep -c "file format")
if [[ -n $bad ]]; then
	echo "FAIL: writable data in $archive:"
	echo "$bad"
	objdump -t "$archive" | awk '$4 ~ /^\.(data|bss|tdata|tbss)/ && $4 !~ /rel\.ro/'
	exit 1
fi
((objects > 0)) || { echo "FAIL: no objects in $archive" >&2; exit 1; }
echo "PASS: $objects objects of $(basename "$archive"), no writable data"
