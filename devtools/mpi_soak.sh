#!/usr/bin/env bash
# The long MPI check by hand (not in CI): test/eco/mpi.sh's job (two ranks on two uroced,
# ping-pong, allreduce and alltoall with every byte checked) run again and again for
# MINUTES with LOSS of the frames each daemon receives dropped (fault.rx_drop), to show
# that under loss MPI over uroce neither hangs nor returns a wrong result. Each job has a
# fresh pair of daemons; a job that fails, or takes longer than mpi.sh's 480 s limit,
# counts as a failure, and its output is kept.
#   devtools/mpi_soak.sh BUILD_DIR MINUTES [LOSS [openmpi|mpich [ALLTOALL_BYTES]]]
# e.g. devtools/mpi_soak.sh build 30 0.01 openmpi 67108864   (root)
# Prints one line per job and a summary. Exit: 0 no job failed, 1 a failure, 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
	sed -n '2,10p' "$0" >&2
	exit 2
fi
build=$(cd "$1" && pwd) minutes=$2 loss=${3:-0.01} mpi=${4:-openmpi}
export ECO_ALLTOALL=${5:-67108864}
export UROCED=$build/app/uroced/uroced UROCE_XFER=$build/app/uroce-xfer/uroce-xfer
export UROCE_CLI=$build/app/uroce/uroce UROCE_VERBS_LIBDIR=$build/lib/verbs
export ECO_DAEMON_SETS="fault.rx_drop=$loss"
out=$(mktemp -d /tmp/uroce-mpi-soak.XXXXXX)
end=$((SECONDS + minutes * 60))
jobs=0 failed=0 total_secs=0 all_drops=0
echo "mpi_soak: $mpi, alltoall $ECO_ALLTOALL B, rx_drop $loss on both daemons, $minutes min;" \
	"logs of failed jobs in $out"
while [ "$SECONDS" -lt "$end" ]; do
	jobs=$((jobs + 1))
	t0=$SECONDS
	bash test/eco/mpi.sh "$mpi" >"$out/job-$jobs.log" 2>&1
	rc=$?
	secs=$((SECONDS - t0))
	total_secs=$((total_secs + secs))
	line=$(grep -E 'PASS|FAIL' "$out/job-$jobs.log" | tail -n 1 | sed 's/^\[[0-9:]*\] //')
	# Frames the two daemons' fault injectors dropped, and RC retries that ran out.
	drops=$(grep -o 'fault.rx.dropped [0-9]*' "$out/job-$jobs.log" | awk '{s += $2} END {print s + 0}')
	all_drops=$((all_drops + drops))
	if [ "$rc" -eq 0 ]; then
		rm -f "$out/job-$jobs.log"
	else
		failed=$((failed + 1))
	fi
	printf '[%s] job %d: exit %d in %d s, %d frames dropped: %s\n' "$(date +%H:%M:%S)" \
		"$jobs" "$rc" "$secs" "$drops" "$line"
done
echo "mpi_soak: $jobs jobs in $minutes min ($total_secs s of jobs), $all_drops frames dropped," \
	"$failed jobs failed"
[ "$failed" -eq 0 ] && rmdir "$out" 2>/dev/null
exit $((failed > 0))
