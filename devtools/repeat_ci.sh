#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the whole CI (.ci/run, the README's test command) many times in a row on fresh
# clones of HEAD, each with nothing beside it as a new user's clone (the checkout carries
# all its tests need), to find what fails one run in N: every other run with a CPU-bound
# process beside it (a busy loop, as a shared CI machine has). Prints one line per run
# (result, what test_summary counted, minutes) as it ends; the output of a failed run
# stays as DIR/run-N.out, its clone as DIR/run-N.
#   devtools/repeat_ci.sh RUNS [DIR]     (root; DIR default /tmp/uroce-repeat-ci)
# Touch DIR/stop to end after the current run. Exit: 0 all passed, 1 a failure, 2 usage.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -lt 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
	sed -n '3,10p' "$0" >&2
	exit 2
fi
runs=$1 dir=${2:-/tmp/uroce-repeat-ci}
mkdir -p "$dir"
# Older versions linked a folder of test data here, beside the clones: a run that could
# still reach it would pass where a new user's clone fails.
rm -f "$dir/stop" "$dir/shared"
hog=
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null; hog=; }
trap stop_hog EXIT
failed=0
for ((r = 1; r <= runs; r++)); do
	[ -e "$dir/stop" ] && break
	load=quiet
	clone=$dir/run-$r
	rm -rf "$clone"
	git clone -q "$top" "$clone" || exit 1
	# HEAD may move while the loop runs: each run names the commit it cloned.
	head=$(git -C "$clone" rev-parse --short HEAD)
	if ((r % 2 == 0)); then
		load="busy loop"
		(while :; do :; done) &
		hog=$!
	fi
	start=$(date +%s)
	(cd "$clone" && bash .ci/run) >"$dir/run-$r.out" 2>&1
	rc=$?
	stop_hog
	mins=$(( ($(date +%s) - start + 30) / 60 ))
	counts=$(grep -E '^tests: ' "$dir/run-$r.out" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		result=PASS
		rm -rf "$clone" "$dir/run-$r.out"
	else
		result="FAIL (rc $rc; $dir/run-$r.out)"
		failed=1
		grep -E '^[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$dir/run-$r.out" | head -n 5 |
			sed 's/^/    /'
	fi
	echo "run $r of $head, $load: $result, ${counts:-no summary}, $mins min"
done
exit $failed
