#!/usr/bin/env bash
# Runs timing-sensitive tests many times to find the ones that fail one run in N: every
# other round with a CPU-bound process beside them (a busy loop on one core, as a shared
# CI machine has), and prints per test how often it passed, with and without that load.
#   devtools/repeat_suites.sh BUILD_DIR ROUNDS TEST...
# e.g. devtools/repeat_suites.sh build 20 verbs_api daemon_loopback rdmacm_one_host
# The meson logs of a failed round stay as BUILD_DIR/meson-logs/repeat-<round>.txt.
# Exit: 0 all passed, 1 a failure, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 3 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
	sed -n '2,8p' "$0" >&2
	exit 2
fi
build=$1 rounds=$2
shift 2
declare -A pass_quiet pass_load fail_quiet fail_load
hog=
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null; hog=; }
trap stop_hog EXIT
failed=0
for ((r = 1; r <= rounds; r++)); do
	load=quiet
	if ((r % 2 == 0)); then
		load=load
		(while :; do :; done) &
		hog=$!
	fi
	meson test -C "$build" --no-rebuild --num-processes 1 --logbase "repeat-$r" "$@" \
		>/dev/null 2>&1
	stop_hog
	log=$build/meson-logs/repeat-$r.json
	round_failed=0
	while read -r name result; do
		if [ "$result" = OK ]; then
			eval "pass_$load[\$name]=\$(( \${pass_$load[\$name]:-0} + 1 ))"
		else
			eval "fail_$load[\$name]=\$(( \${fail_$load[\$name]:-0} + 1 ))"
			echo "round $r ($load): $name $result (log: $build/meson-logs/repeat-$r.txt)"
			failed=1 round_failed=1
		fi
	done < <(python3 -c 'import json, sys
for d in map(json.loads, open(sys.argv[1])): print(d["name"].split(" / ")[-1], d["result"])' \
		"$log")
	[ "$round_failed" = 1 ] || rm -f "$build/meson-logs/repeat-$r".*
done
printf '%-28s %14s %14s\n' test "passed quiet" "passed loaded"
for t in "$@"; do
	pq=${pass_quiet[$t]:-0} fq=${fail_quiet[$t]:-0} pl=${pass_load[$t]:-0} fl=${fail_load[$t]:-0}
	printf '%-28s %14s %14s\n' "$t" "$pq/$((pq + fq))" "$pl/$((pl + fl))"
done
exit $failed
