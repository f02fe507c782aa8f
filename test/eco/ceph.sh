#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Ceph (Debian's 16.2, unmodified) over two uroced: a cluster of one monitor and two
# memstore OSDs on host A, the rados client on host B, each host a network namespace with
# its daemon and the daemon's kernel interface (host.kernel_iface), so that a Ceph
# address is its RDMA device's address, as on an RNIC. Each messenger mode gets a cluster
# of its own, made and torn down here:
#   tcp        ms_type async+posix: the baseline, the kernel's TCP over the veth pair
#              (run first, before the daemons start: an af_packet daemon would copy
#              every frame of it);
#   rdma-srq   ms_type async+rdma with Ceph's defaults (a shared receive queue);
#   rdma       async+rdma, a receive queue per QP (ms_async_rdma_support_srq false).
# In each: a pool of two replicas (every write crosses OSD to OSD too), `rados bench`
# write then seq (which checks each object's contents), files put and got back with
# rados and compared, and for the RDMA modes each daemon's RoCE packet counters must have
# moved at least the bytes written. The figures go to doc/ecosystem.md.
#
#   test/eco/ceph.sh [MODE...]   (root; $UROCED, $UROCE_XFER, $UROCE_CLI,
#                                 $UROCE_VERBS_LIBDIR; default: tcp rdma-srq rdma)
# Env: ECO_CEPH_SECONDS, each bench's length (default 8); ECO_CEPH_CONF, lines added to
# every ceph.conf's [global] (by hand: "debug_ms = 20" to see each RDMA chunk).
# Exit: 0 passed, 1 failed, 77 skipped (not root, or ceph-mon/ceph-osd/ceph-common missing).
set -u
. "$(dirname "$0")/../integration/lib.sh"

for t in ceph-mon ceph-osd ceph rados monmaptool; do
	if ! command -v "$t" >/dev/null; then
		echo "eco_ceph: $t not found (apt-get install ceph-mon ceph-osd ceph-common); skipped"
		exit 77
	fi
done
it_init eco_ceph
MODES=("$@")
[ ${#MODES[@]} -gt 0 ] || MODES=(tcp rdma-srq rdma)
SECONDS_EACH=${ECO_CEPH_SECONDS:-8}
CMD_LIMIT=60
NET=10.83.0
fails=0

it_veth_pair 1500 || exit 1

# on HOST CMD...: CMD in host A's or B's namespace, on that host's daemon, with the
# cluster's configuration.
on() {
	local h=$1
	shift
	local ns=$IT_NS_A
	[ "$h" = B ] && ns=$IT_NS_B
	# Without meson's MALLOC_PERTURB_: glibc would fill each process's ~1.1 GiB of fresh
	# messenger buffers, and registering touched memory copies it all (doc/benchmarks.md,
	# "Memory registration"): a rados command took 10 s in the test command's run.
	${_on_exec:-} ip netns exec "$ns" env -u MALLOC_PERTURB_ UROCE_SOCKET="$(it_sock "$h")" \
		LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR" CEPH_CONF="$CONF" "$@"
}

# daemon_on HOST CMD...: CMD in the background as `on` runs it, its pid CMD's own (not a
# subshell's, which a signal would end and leave CMD running) in IT_PIDS and CEPH_PIDS.
daemon_on() {
	(
		_on_exec="exec"
		on "$@"
	) &
	IT_PIDS+=($!)
	CEPH_PIDS+=($!)
}

# conf MODE DIR: the cluster's ceph.conf.
conf() {
	local mode=$1 dir=$2 ms
	case $mode in
	tcp) ms="ms_type = async+posix" ;;
	rdma-srq | rdma)
		# gid index 1: the daemon's IPv4 GID (index 0 is the link-local one), RoCE v2.
		# Without the SRQ, a receive queue of 128 (Ceph's default, 4,096, gives each
		# connection 512 MiB of buffers and takes the process's 32,768 in a few).
		ms="ms_type = async+rdma
ms_async_rdma_device_name = uroce0
ms_async_rdma_port_num = 1
ms_async_rdma_roce_ver = 2
ms_async_rdma_gid_idx = 1
ms_async_rdma_receive_queue_len = $([ "$mode" = rdma-srq ] && echo 4096 || echo 128)
ms_async_rdma_support_srq = $([ "$mode" = rdma-srq ] && echo true || echo false)"
		;;
	esac
	cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $FSID
mon_host = [v2:$NET.1:3300,v1:$NET.1:6789]
public_network = $NET.0/24
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $dir/run
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid
keyring = /dev/null
osd_objectstore = memstore
memstore_device_bytes = 3221225472
osd_pool_default_size = 2
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 16
osd_crush_chooseleaf_type = 0
osd_data = $dir/\$name
mon_data = $dir/\$name
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
$ms
${ECO_CEPH_CONF:-}
EOF
}

# ceph_wait WHAT SECONDS CMD...: until CMD succeeds. Each try's own limit (CMD_LIMIT) is
# long: a try killed before it is through would be followed by another that starts over
# (each Ceph command is a new process that registers its buffers and connects anew), and
# on a loaded machine every try could be killed so.
ceph_wait() {
	local what=$1 t=$2
	shift 2
	local end=$((SECONDS + t))
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	it_log "FAILED: $what not within $t s"
	return 1
}

# cluster_up MODE: a monitor and two OSDs on host A, a pool "bench" of two replicas.
cluster_up() {
	local mode=$1 id uuid
	CDIR=$IT_DIR/ceph-$mode
	CONF=$CDIR/ceph.conf
	FSID=$(cat /proc/sys/kernel/random/uuid)
	mkdir -p "$CDIR/run" "$CDIR/log" "$CDIR/mon.a"
	conf "$mode" "$CDIR"
	monmaptool --create --fsid "$FSID" --addv a "[v2:$NET.1:3300,v1:$NET.1:6789]" \
		"$CDIR/monmap" >/dev/null || return 1
	on A ceph-mon --mkfs -i a --monmap "$CDIR/monmap" >"$CDIR/log/mkfs-mon.out" 2>&1 ||
		{ cat "$CDIR/log/mkfs-mon.out"; return 1; }
	CEPH_PIDS=()
	daemon_on A ceph-mon -f -i a >"$CDIR/log/mon.a.out" 2>&1
	ceph_wait "the monitor" 180 on B timeout "$CMD_LIMIT" ceph mon stat || return 1
	it_log "$mode: the monitor answers"
	for id in 0 1; do
		uuid=$(cat /proc/sys/kernel/random/uuid)
		[ "$(on B timeout "$CMD_LIMIT" ceph osd new "$uuid")" = "$id" ] || return 1
		mkdir -p "$CDIR/osd.$id"
		on A ceph-osd -i "$id" --mkfs --osd-uuid "$uuid" >"$CDIR/log/mkfs-osd.$id.out" 2>&1 ||
			{ cat "$CDIR/log/mkfs-osd.$id.out"; return 1; }
		daemon_on A ceph-osd -f -i "$id" >"$CDIR/log/osd.$id.out" 2>&1
	done
	ceph_wait "two OSDs up" 180 osds_up || return 1
	it_log "$mode: two OSDs up"
	on B timeout "$CMD_LIMIT" ceph osd pool create bench 16 16 >/dev/null 2>&1 || return 1
	# No manager here (placement group states are a manager's): the first write that
	# completes says the pool's groups are active on both OSDs.
	head -c 4096 /dev/urandom >"$CDIR/probe"
	ceph_wait "a first write" 180 on B timeout "$CMD_LIMIT" rados -p bench put probe \
		"$CDIR/probe"
}

osds_up() {
	on B timeout "$CMD_LIMIT" ceph osd stat -f json | grep -q '"num_up_osds":2'
}

# cluster_down: the OSDs and the monitor end; their RDMA resources with them.
cluster_down() {
	it_stop_pids "${CEPH_PIDS[@]}"
	CEPH_PIDS=()
}

# roce_pkts COUNTER: daemon B's COUNTER (sent_pkts, rcvd_pkts), 0 in the TCP mode.
roce_pkts() {
	if [ -n "${IT_PID_B:-}" ]; then
		it_stat "$(it_sock B)" "$1"
	else
		echo 0
	fi
}

# rados_bench MODE PHASE COUNTER: `rados bench` PHASE (write or seq) from host B, its
# bandwidth and object count in BENCH_BW and BENCH_N; seq fails on an object whose contents
# are not what write put. In the RDMA modes daemon B's COUNTER must have moved at least a
# packet per 4 KiB of the 4 MiB objects (RoCE payloads of 1,024 bytes here).
rados_bench() {
	local mode=$1 phase=$2 counter=$3 out=$CDIR/log/bench-$2.out p0 pkts
	local -a keep=()
	[ "$phase" = write ] && keep=(--no-cleanup)
	p0=$(roce_pkts "$counter")
	if ! on B timeout -k 5 $((SECONDS_EACH + 90)) rados bench -p bench "$SECONDS_EACH" \
		"$phase" -t 16 "${keep[@]}" >"$out" 2>&1 || grep -q 'is not correct' "$out"; then
		it_log "FAILED: $mode: rados bench $phase:"
		tail -n 15 "$out"
		return 1
	fi
	pkts=$(($(roce_pkts "$counter") - p0))
	BENCH_BW=$(awk '/^Bandwidth \(MB\/sec\):/ {print $3}' "$out")
	BENCH_N=$(awk '/^Total (writes|reads) made:/ {print $4}' "$out")
	if [ "$mode" != tcp ] && [ "$pkts" -lt $((BENCH_N * 1024)) ]; then
		it_log "FAILED: $mode: $BENCH_N objects in rados bench $phase," \
			"daemon B's $counter moved by only $pkts"
		return 1
	fi
}

# bench MODE: rados bench write and seq, put and get; the figures in RESULT_<MODE>.
bench() {
	local mode=$1 w r f n nr t0 t
	rados_bench "$mode" write sent_pkts || return 1
	w=$BENCH_BW n=$BENCH_N
	rados_bench "$mode" seq rcvd_pkts || return 1
	r=$BENCH_BW nr=$BENCH_N
	t0=$(date +%s.%N)
	for f in 1 2 3 4; do
		head -c $((f * 3 * 1048576 + f)) /dev/urandom >"$CDIR/put.$f"
		if ! on B timeout 60 rados -p bench put "obj.$f" "$CDIR/put.$f" ||
			! on B timeout 60 rados -p bench get "obj.$f" "$CDIR/got.$f" ||
			! cmp -s "$CDIR/put.$f" "$CDIR/got.$f"; then
			it_log "FAILED: $mode: rados put/get of obj.$f"
			return 1
		fi
	done
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", (b - a) / 8}')
	it_log "ok: $mode: rados bench write $w MB/s ($n objects of 4 MiB), seq $r MB/s" \
		"($nr objects read, each one's contents checked), 4 files put and got back equal" \
		"(a rados command: $t s)"
	printf -v "RESULT_${mode//-/_}" '%s %s' "$w" "$r"
}

# hosts_for MODE: the addresses and (for RDMA) the daemons MODE's cluster needs.
hosts_for() {
	if [ "$1" = tcp ]; then
		ip -n "$IT_NS_A" addr add "$NET.1/24" dev "$IT_IF_A" &&
			ip -n "$IT_NS_B" addr add "$NET.2/24" dev "$IT_IF_B"
		return
	fi
	ip -n "$IT_NS_A" addr flush dev "$IT_IF_A"
	ip -n "$IT_NS_B" addr flush dev "$IT_IF_B"
	[ -n "${IT_PID_A:-}" ] && return 0
	# af_packet rings of 8192 frames: Ceph's threads poll beside the daemons (ucx.sh).
	it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500),framecnt=8192" "$NET.1" \
		1500 --set host.kernel_iface=uroce0 || return 1
	it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500),framecnt=8192" "$NET.2" \
		1500 --set host.kernel_iface=uroce0
}

for mode in "${MODES[@]}"; do
	hosts_for "$mode" || exit 1
	it_log "$mode: making the cluster"
	if cluster_up "$mode" && bench "$mode"; then
		:
	else
		fails=$((fails + 1))
		for f in "$CDIR"/log/*.out "$CDIR"/log/*.log; do
			echo "---- $f"
			grep -v verify_prereq "$f" | tail -n 15
		done
	fi
	cluster_down
	if [ -n "${IT_PID_A:-}" ]; then
		for d in A B; do
			echo "    daemon $d after $mode:$(for c in sent_pkts rcvd_pkts rcvd_unknown_qp \
				rcvd_in_wrong_state completer_retry_err retry_rnr_exceeded_err \
				port.rx_socket_drops; do
				printf ' %s %s' "$c" "$(it_stat "$(it_sock $d)" "$c")"
			done)"
		done
	fi
done
# The figures beside TCP's, as doc/ecosystem.md gives them.
if [ -n "${RESULT_tcp:-}" ]; then
	read -r tw tr <<<"$RESULT_tcp"
	for m in rdma_srq rdma; do
		v="RESULT_$m"
		[ -n "${!v:-}" ] || continue
		read -r w r <<<"${!v}"
		it_log "$m against tcp: write $w/$tw MB/s ($(awk -v a="$w" -v b="$tw" \
			'BEGIN {printf "%.2f", a / b}')x), seq $r/$tr MB/s ($(awk -v a="$r" -v b="$tr" \
			'BEGIN {printf "%.2f", a / b}')x)"
	done
fi
if [ "$fails" -ne 0 ]; then
	it_log "eco_ceph: $fails mode(s) failed"
	exit 1
fi
it_log "eco_ceph: all modes passed"
exit 0
