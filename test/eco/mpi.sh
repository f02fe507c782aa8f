#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI over UCX over two uroced joined by a veth pair, unmodified from Debian: Open MPI 4.1
# (openmpi-bin, `--mca pml ucx`) or MPICH 4.0 (mpich, whose ch4 device is built on UCX).
# Two hosts as a cluster has them: each daemon in its network namespace with its kernel
# interface (host.kernel_iface), so the launcher's TCP and the RDMA device share an
# address. The launcher runs on host A (10.80.0.1) and starts rank 1 on host B through a
# remote shell that is a helper entering B's namespace (Open MPI's plm_rsh_agent, Hydra's
# -launcher-exec), its daemon calling back over TCP through the daemons. Each rank uses
# the daemon of the namespace it runs in. They run test/eco/mpi_check.c: a ping-pong of 100
# sizes up to 1 MiB, an allreduce and an alltoall of $ECO_ALLTOALL bytes (default 1 GiB),
# every byte checked. Same-host transports are excluded (UCX_TLS=^shm,cma,tcp; for Open
# MPI no vader/tcp BTL either): the bytes must cross uroce, and both daemons' counters
# must show it (two ranks on one daemon would show on one only).
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
	MPICC=mpicc.openmpi RUN=mpirun.openmpi
	PKGS="openmpi-bin libopenmpi-dev"
	;;
mpich)
	MPICC=mpicc.mpich RUN=mpirun.mpich PKGS="mpich libmpich-dev"
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
	--set host.kernel_iface=uroce0 "${sets[@]}" || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500),framecnt=8192" 10.80.0.2 1500 \
	--set host.kernel_iface=uroce0 "${sets[@]}" || exit 1
# The remote shell: HOST COMMAND..., run in that host's namespace (what ssh would do).
cat >"$IT_DIR/agent.sh" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in
10.80.0.1) ns=$IT_NS_A ;;
10.80.0.2) ns=$IT_NS_B ;;
*) echo "agent.sh: no host \$host here" >&2; exit 1 ;;
esac
echo "\$host" >>"$IT_DIR/agent.log"
exec ip netns exec "\$ns" sh -c "\$*"
EOF
# Each rank on the daemon of its namespace: a launcher may pass its own UROCE_SOCKET on
# (Hydra does), and the socket, a path, is reachable from any namespace.
cat >"$IT_DIR/rank.sh" <<EOF
#!/bin/sh
case \$(ip netns identify \$\$) in
$IT_NS_A) UROCE_SOCKET=$(it_sock A) ;;
$IT_NS_B) UROCE_SOCKET=$(it_sock B) ;;
*) echo "rank.sh: not in a daemon's namespace" >&2; exit 1 ;;
esac
export UROCE_SOCKET LD_LIBRARY_PATH=$UROCE_VERBS_LIBDIR
exec "\$@"
EOF
chmod +x "$IT_DIR/agent.sh" "$IT_DIR/rank.sh"

sent0_a=$(it_stat "$(it_sock A)" sent_pkts)
sent0_b=$(it_stat "$(it_sock B)" sent_pkts)
t0=$(date +%s)
if [ "$mpi" = openmpi ]; then
	# --bind-to none: each "host" would bind its one rank to its first core, and the
	# two hosts are one machine: both ranks would spin on core 0.
	launch=("$RUN" --allow-run-as-root --host 10.80.0.1,10.80.0.2 -np 2 --bind-to none
		--mca plm_rsh_agent "$IT_DIR/agent.sh" --mca oob_tcp_if_include uroce0
		--mca pml ucx --mca btl ^vader,tcp,openib,uct
		-x UCX_TLS=^shm,cma,tcp -x UCX_NET_DEVICES=uroce0:1)
else
	launch=("$RUN" -hosts 10.80.0.1,10.80.0.2 -np 2 -launcher rsh
		-launcher-exec "$IT_DIR/agent.sh" -iface uroce0
		-genv UCX_TLS '^shm,cma,tcp' -genv UCX_NET_DEVICES uroce0:1)
fi
ip netns exec "$IT_NS_A" timeout -k 5 480 "${launch[@]}" "$IT_DIR/rank.sh" \
	"$IT_DIR/mpi_check" "$ALLTOALL" >"$IT_DIR/mpi.out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
sent_a=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0_a))
sent_b=$(($(it_stat "$(it_sock B)" sent_pkts) - sent0_b))
sent=$((sent_a < sent_b ? sent_a : sent_b))
# The alltoall alone moves ALLTOALL/2 bytes each way: at least that many 1 KiB packets.
want=$((ALLTOALL / 2 / 1024))
for d in A B; do
	echo "    $d: $(it_stats_prefix "$(it_sock $d)" port. |
		awk '$1 ~ /packets|rx_socket_drops/ {printf "%s %s ", $1, $2}')" \
		"completer_retry_err $(it_stat "$(it_sock $d)" completer_retry_err)" \
		"fault.rx.dropped $(it_stat "$(it_sock $d)" fault.rx.dropped)"
done
remote=$(grep -c '^10.80.0.2$' "$IT_DIR/agent.log" 2>/dev/null)
if [ "$rc" -eq 0 ] && grep -q '^mpi_check: ok' "$IT_DIR/mpi.out" && [ "$sent" -ge "$want" ] &&
	[ "${remote:-0}" -ge 1 ]; then
	it_log "PASS $(grep '^mpi_check:' "$IT_DIR/mpi.out") in $secs s; rank 1 started on" \
		"host B through the remote shell; the daemons sent $sent_a and $sent_b packets"
	exit 0
fi
it_log "FAIL mpirun exit $rc after $secs s; the daemons sent $sent_a and $sent_b packets" \
	"(want $want or more each); remote shell to host B used ${remote:-0} time(s):"
grep -v '^ *\[[0-9]*\] \|^ *[0-9]* ' "$IT_DIR/mpi.out" | tail -n 20
exit 1
