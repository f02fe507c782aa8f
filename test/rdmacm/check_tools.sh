#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Every unmodified program or pyverbs module that imports librdmacm (ABI_DIR/*.txt lists
# what each imports, name@RDMACM_x) loads with this build's librdmacm.so.1 and
# libibverbs.so.1 and resolves every import at once (ldd -r: what BIND_NOW does at start).
# Programs not installed are listed and skipped; none installed: exit 77.
# usage: check_tools.sh ABI_DIR RDMACM_LIB_DIR VERBS_LIB_DIR
set -uo pipefail
abi=$1 rdmacm=$2 verbs=$3
checked=0 failed=0
for f in "$abi"/*.txt; do
	grep -q '@RDMACM_' "$f" || continue
	name=$(basename "$f" .txt)
	case $name in
	py_*)
		mod=${name#py_}
		bin=$(ls /usr/lib/python3/dist-packages/"${mod//.//}".cpython-*.so 2>/dev/null | head -1)
		;;
	*) bin=$(command -v "$name" || true) ;;
	esac
	if [ -z "$bin" ]; then
		echo "skip $name: not installed"
		continue
	fi
	out=$(LD_LIBRARY_PATH=$rdmacm:$verbs ldd -r "$bin" 2>&1)
	checked=$((checked + 1))
	lib=$(sed -n 's/^\s*librdmacm\.so\.1 => \(\S*\).*/\1/p' <<<"$out")
	bad=$(grep -E 'undefined symbol|not found|version .* not found' <<<"$out")
	if [ "$(readlink -f "$lib")" != "$(readlink -f "$rdmacm/librdmacm.so.1")" ] || [ -n "$bad" ]; then
		echo "FAIL $name ($bin): librdmacm.so.1 => ${lib:-none}"
		[ -n "$bad" ] && sed 's/^/    /' <<<"$bad"
		failed=$((failed + 1))
	else
		echo "ok   $name: $(grep -c '@RDMACM_' "$f") librdmacm imports resolve"
	fi
done
echo "$checked checked, $failed failed"
[ "$checked" -gt 0 ] || exit 77
[ "$failed" -eq 0 ]
