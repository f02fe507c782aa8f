#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man pages render with man -l without a warning, and none is missing what it
# documents: uroced.conf(5) every key of the table under its section (uroce-conf-gen
# --defaults lists them), uroce(8) every command `uroce --help` lists, uroced(8) every
# option `uroced -- --help` lists (that one needs root for DPDK's EAL; without it the
# check is skipped and said).
#   man_pages.sh CONF_5 UROCED_8 UROCE_8 CONF_GEN UROCE UROCED [OTHER_PAGE...]
# (the other pages are only rendered)
# Exit: 0 passed, 1 failed, 77 no man (Debian's man-db).
set -uo pipefail
conf5=$1 uroced8=$2 uroce8=$3 gen=$4 cli=$5 daemon=$6
shift 6
if ! command -v man >/dev/null; then
	echo "man_pages: man not installed (man-db); skipped"
	exit 77
fi
fails=0
fail() {
	echo "FAILED: $*"
	fails=$((fails + 1))
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for page in "$conf5" "$uroced8" "$uroce8" "$@"; do
	name=$(basename "$page")
	if ! MANWIDTH=100 man --warnings -E UTF-8 -l "$page" >"$tmp/$name.txt" 2>"$tmp/$name.err"; then
		fail "$name: man -l exits $?"
	elif [ -s "$tmp/$name.err" ]; then
		fail "$name: warnings:"
		cat "$tmp/$name.err"
	else
		echo "ok: $name renders ($(wc -l <"$tmp/$name.txt") lines), no warning"
	fi
done

# uroced.conf(5): "   [section]" then "       key = default" for each key of the table.
"$gen" --defaults | awk '/^\[/ { s = $0 } /^[a-z_0-9]+ =/ { print s, $1 }' >"$tmp/keys"
missing=$(awk 'NR == FNR { want[$1 " " $2] = 1; next }
	/^   \[/ { s = $1 } /^       [a-z_0-9]+ = / { have[s " " $1] = 1 }
	END { for (k in want) if (!(k in have)) print k }' "$tmp/keys" "$tmp/uroced.conf.5.txt")
if [ -n "$missing" ]; then
	fail "uroced.conf.5 lacks: $missing"
else
	echo "ok: uroced.conf.5 has all $(wc -l <"$tmp/keys") keys, each under its section"
fi

# uroce(8): each command of the usage, as a tagged paragraph.
"$cli" --help | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p' | sort -u >"$tmp/commands"
[ -s "$tmp/commands" ] || fail "uroce --help lists no command"
while read -r c; do
	grep -q "^       $c\( \|$\)" "$tmp/uroce.8.txt" || fail "uroce.8 lacks the command $c"
done <"$tmp/commands"
echo "ok: uroce.8 checked for $(wc -l <"$tmp/commands") commands"

# uroced(8): each option of the daemon's own usage.
if [ "$(id -u)" -eq 0 ]; then
	# DPDK prints its own options' usage first; ours starts at "usage: uroced", and the
	# EAL example on its last line is DPDK's too.
	"$daemon" --no-pci --no-huge -m 64 --in-memory --log-level=lib.eal:error -- --help \
		2>/dev/null | sed -n '/^usage: uroced/,$p' | grep -v '^EAL example' >"$tmp/usage"
	grep -o -- '--[a-z][a-z-]*' "$tmp/usage" | sort -u >"$tmp/options"
	[ -s "$tmp/options" ] || fail "uroced --help lists no option"
	while read -r o; do
		grep -q -- "$o" "$tmp/uroced.8.txt" || fail "uroced.8 lacks the option $o"
	done <"$tmp/options"
	echo "ok: uroced.8 checked for $(wc -l <"$tmp/options") options: $(tr '\n' ' ' <"$tmp/options")"
else
	echo "uroced.8's options not checked: uroced --help needs root for DPDK's EAL"
fi
exit $((fails > 0))
