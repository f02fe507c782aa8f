#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI over UCX over two uroced joined by a veth pair, unmodified from Debian: Open MPI 4.1
# (openmpi-bin, `--mca pml ucx`) or MPICH 4.0 (mpich, whose ch4 device is built on UCX).
# Two ranks, each on its own daemon (a wrapper sets UROCE_SOCKET by rank: the launcher
# starts both here, without ssh), run test/eco/mpi_check.c: a ping-pong of 100 sizes up
# to 1 MiB, an allreduce and an alltoall of $ECO_ALLTOALL bytes (default 1 GiB), every
# byte checked. Same-host transports are excluded (UCX_TLS=^shm,cma,tcp; for Open MPI no
# vader/tcp BTL either): both ranks run on this machine, and the bytes must cross uroce,
# which the daemons' counters confirm.
#
#   test/eco/mpi.sh openmpi|mpich   (root; $UROCED, $UROCE_XFER, $UROCE_CLI,
#                                    $UROCE_VERBS_LIBDIR)
# Env: ECO_ALLTOALL (bytes); ECO_DAEMON_SETS, settings for both daemons, space-separated
# ("fault.rx_drop=0.01": devtools/mpi_soak.sh runs the job in a loop under loss).
# Exit: 0 passed, 1 failed, 77 skipped (not root, or the MPI's packages missing).
set -u
. "$(dirname "$0")/../integration/lib.sh"

mpi=${1:-}
case $mpi in
openmpi)
	MPICC=mpicc.openmpi RUN=mpirun.openmpi RANK_VAR=OMPI_COMM_WORLD_RANK
	PKGS="openmpi-bin libopenmpi-dev"
	;;
mpich)
	MPICC=mpicc.mpich RUN=mpirun.mpich RANK_VAR=PMI_RANK PKGS="mpich libmpich-dev"
	;;
*)
	echo "usage: $0 openmpi|mpich" >&2
	exit 2
	;;
esac
for t in "$MPICC" "$RUN"; do
	if ! command -v "$t" >/dev/null; then
		echo "eco_$mpi: $t not found (apt-get install $PKGS); skipped"
		exit 77
	fi
done
it_init "eco_$mpi"
ALLTOALL=${ECO_ALLTOALL:-1073741824}

"$MPICC" -O2 -Wall -Wextra -Werror -o "$IT_DIR/mpi_check" "$(dirname "$0")/mpi_check.c" ||
	exit 1
# af_packet rings of 8192 frames: the two ranks busy-poll beside the daemons (ucx.sh).
sets=()
for kv in ${ECO_DAEMON_SETS:-}; do
	sets+=(--set "$kv")
done
it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500),framecnt=8192" 10.80.0.1 1500 \
	"${sets[@]}" || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500),framecnt=8192" 10.80.0.2 1500 \
	"${sets[@]}" || exit 1
cat >"$IT_DIR/rank.sh" <<EOF
#!/bin/sh
# rank 0 on daemon A, rank 1 on daemon B
if [ "\${$RANK_VAR:-0}" = 0 ]; then UROCE_SOCKET=$(it_sock A); else UROCE_SOCKET=$(it_sock B); fi
export UROCE_SOCKET LD_LIBRARY_PATH=$UROCE_VERBS_LIBDIR
exec "\$@"
EOF
chmod +x "$IT_DIR/rank.sh"

sent0=$(it_stat "$(it_sock A)" sent_pkts)
t0=$(date +%s)
if [ "$mpi" = openmpi ]; then
	launch=("$RUN" --allow-run-as-root --oversubscribe -np 2 --mca pml ucx
		--mca btl ^vader,tcp,openib,uct -x UCX_TLS=^shm,cma,tcp -x UCX_NET_DEVICES=uroce0:1)
else
	launch=("$RUN" -np 2 -genv UCX_TLS '^shm,cma,tcp' -genv UCX_NET_DEVICES uroce0:1)
fi
timeout -k 5 480 "${launch[@]}" "$IT_DIR/rank.sh" "$IT_DIR/mpi_check" "$ALLTOALL" \
	>"$IT_DIR/mpi.out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
# The alltoall alone moves ALLTOALL/2 bytes each way: at least that many 1 KiB packets.
want=$((ALLTOALL / 2 / 1024))
for d in A B; do
	echo "    $d: $(it_stats_prefix "$(it_sock $d)" port. |
		awk '$1 ~ /packets|rx_socket_drops/ {printf "%s %s ", $1, $2}')" \
		"completer_retry_err $(it_stat "$(it_sock $d)" completer_retry_err)" \
		"fault.rx.dropped $(it_stat "$(it_sock $d)" fault.rx.dropped)"
done
if [ "$rc" -eq 0 ] && grep -q '^mpi_check: ok' "$IT_DIR/mpi.out" && [ "$sent" -ge "$want" ]; then
	it_log "PASS $(grep '^mpi_check:' "$IT_DIR/mpi.out") in $secs s;" \
		"rank 0's daemon sent $sent packets"
	exit 0
fi
it_log "FAIL mpirun exit $rc after $secs s, $sent packets sent by rank 0's daemon" \
	"(want $want or more):"
grep -v '^ *\[[0-9]*\] \|^ *[0-9]* ' "$IT_DIR/mpi.out" | tail -n 20
exit 1
