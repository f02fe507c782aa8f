#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The unmodified tools against Linux soft-RoCE, both roles: on our side the Debian
# binaries (ibverbs-utils, perftest) over the drop-in libibverbs.so.1 and a uroced; on
# the other an rxe VM (QEMU, Debian kernel 6.1 rdma_rxe, rdma-core 44, perftest 4.5-0.17;
# the guest of test/vm) running the same tools on
# rxe0. Each tool runs twice: the VM serves and we connect, then we serve and the VM
# connects. Both sides must exit 0.
#   ibv_rc_pingpong, ibv_ud_pingpong, ib_send_lat, ib_write_bw, ib_read_lat,
#   ib_atomic_lat (perftest without -R: its exchange is its own TCP)
#
# Topology (doc/interop.md; all inside a private netns): uroced -- af_packet on rxeveth0
# == rxeveth0-br -- bridge rxebr0 (198.18.0.254, the TCP exchanges) -- rxetap0 == VM
# eth0/rxe0 (198.18.0.1). uroced is 198.18.0.100; address resolution is real both ways.
#
#   test/verbs/rxe_tools.sh    (root; qemu-system-x86_64; the guest image built once with
#                               test/vm/image.sh)
# Env: VERBS_LIB_DIR (the folder of the built libibverbs.so.1), UROCED, UROCE_XFER,
# UROCE_CLI; ITERS (ping-pong and perftest iterations, default 50); TOOLS_ONLY="regex";
# REPEAT (runs of each case, default 1); RXE_CAPTURE=FILE (uroced writes a pcap).
# TCG is slow: small counts, generous timeouts. Exit: 0 passed, 1 failed, 77 skipped.
set -uo pipefail
# meson's test environment points LD_LIBRARY_PATH at the build's libraries: qemu (which
# links libibverbs) and the helpers must not load ours; only our side's tools do.
unset LD_LIBRARY_PATH
. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${TOOLS_ONLY:=}"
: "${ITERS:=50}"
: "${REPEAT:=1}" # runs of each case (a stress aid)

it_init rxe_tools
for t in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ib_send_lat ib_write_bw ib_read_lat \
	ib_atomic_lat; do
	if ! command -v "$t" >/dev/null; then
		echo "rxe_tools: $t not installed (ibverbs-utils, perftest); skipped"
		exit 77
	fi
done
if [ ! -e "$VERBS_LIB_DIR/libibverbs.so.1" ]; then
	echo "rxe_tools: $VERBS_LIB_DIR/libibverbs.so.1 not built; skipped"
	exit 77
fi
it_rxe_vm_require

# Own namespace and VM names, so a run never meets another's (rxe_interop uses uxr/uxi).
it_rxe_vm_names uxt${IT_ID} uxv${IT_ID}

T0=$SECONDS
it_rxe_vm_up || exit 1
VGID=$(vmx exec -- roce-gid 2>/dev/null | tr -dc 0-9)
VGID=${VGID:-1}

it_daemon R "$NS" "--vdev=net_af_packet0,iface=rxeveth0" "$OUR_IP" 1500 || exit 1
S=$(it_sock R)
if [ -n "${RXE_CAPTURE:-}" ]; then # a pcap of every RoCE frame (a debugging aid)
	"$UROCE_CLI" -S "$S" capture start "$RXE_CAPTURE" || exit 1
fi
ours() { ip netns exec "$NS" env LD_LIBRARY_PATH="$VERBS_LIB_DIR" UROCE_SOCKET="$S" "$@"; }
GIDX=$(ours ibv_devinfo -v 2>/dev/null |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:198\.18\.0\.100.*/\1/p' | head -1)
GIDX=${GIDX:-1}
it_log "GID index: ours $GIDX (::ffff:$OUR_IP), rxe0 $VGID (::ffff:$VM_IP)"

want() { [ -z "$TOOLS_ONLY" ] || [[ $1 =~ $TOOLS_ONLY ]]; }

# After a failure: both sides' non-zero error and retry counters.
diag() {
	"$UROCE_CLI" -S "$S" stat 2>/dev/null |
		awk '$2 != 0 && $1 ~ /retr|nak|dup|seq|timeout|drop|err|lost|rnr/ { printf "%s %s  ", $1, $2 }' |
		fold -w 150 | sed 's/^/    uroced: /'
	echo
	vmx exec -- 'rdma statistic show link rxe0/1' 2>/dev/null | tr -s ' ' | fold -w 150 |
		sed 's/^/    vm: /'
}
PORT=$((18700 + (IT_ID % 100) * 20))
FILTER=
# The lines of a tool's output worth showing.
show() { grep -E "$FILTER" | sed "s/^/    $1 /"; }

# pair_both LABEL TOOL "COMMON ARGS" GID_OPTION: TOOL in both roles, first the VM's listens
# and ours connects to it (LABEL/rxe-server), then ours listens and the VM's connects to
# the bridge's address (LABEL/rxe-client). The device and GID arguments differ: ours
# -d uroce0 and our IPv4 GID index, the VM's -d rxe0 and its own.
pair_both() {
	local label=$1 r role
	shift
	for r in $(seq 1 "$REPEAT"); do
		for role in rxe-server rxe-client; do
			want "$label/$role" || continue
			attempt "$label/$role" "$role" "$@"
		done
	done
}

# attempt LABEL ROLE TOOL "COMMON ARGS" GID_OPTION: one exchange, tried a second time if
# the first fails (counted in RETRIED and shown): a TCG VM on this loaded 2-core host can
# stall for more than the 0.54 s the tools' RC retry budget allows (timeout 14 = 67 ms,
# retry_cnt 7), which our transport enforces and rxe does not (it retries forever with
# retry_cnt 7). A second failure counts.
RETRIED=0
attempt() {
	local label=$1 n note
	shift
	for n in 1 2; do
		if run_one "$@"; then
			note=
			[ "$n" -eq 2 ] && note=" (2nd attempt)"
			it_log "PASS $label ($((SECONDS - T1)) s): $TOOL_CMD$note"
			show "us: " <"$IT_DIR/ours.out"
			echo "$VOUT" | show "rxe:"
			return 0
		fi
		it_log "FAIL $label (attempt $n): ours exit $RC, rxe exit $VRC: $TOOL_CMD"
		tail -n 12 "$IT_DIR/ours.out" | sed 's/^/    us:  /'
		echo "$VOUT" | tail -n 12 | sed 's/^/    rxe: /'
		diag
		[ "$n" -eq 1 ] && RETRIED=$((RETRIED + 1))
	done
	IT_FAILS=$((IT_FAILS + 1))
	return 1
}

# run_one ROLE TOOL "COMMON ARGS" GID_OPTION: ROLE rxe-server: the VM's TOOL listens and
# ours connects to it; rxe-client: ours listens and the VM's connects to the bridge's
# address. The device and GID arguments differ: ours -d uroce0 and our IPv4 GID index,
# the VM's -d rxe0 and its own. Sets RC, VRC (exit statuses), VOUT (the VM's output).
run_one() {
	local role=$1 tool=$2 common=$3 gopt=$4 spid i
	local ourargs="-d uroce0 $gopt $GIDX $common" vmargs="-d rxe0 $gopt $VGID $common"
	local log=$IT_DIR/ours.out
	TOOL_CMD="$tool $common"
	PORT=$((PORT + 1))
	T1=$SECONDS
	if [ "$role" = rxe-server ]; then
		vmx spawn job -- "$tool $vmargs -p $PORT" >/dev/null
		# Connect only once the VM listens: the tools try once.
		vmx exec -t 60 -- "for i in \$(seq 300); do ss -ltn | grep -q ':$PORT ' && exit 0; sleep 0.1; done; exit 1" >/dev/null
		# shellcheck disable=SC2086
		ours timeout -k 5 150 "$tool" $ourargs -p "$PORT" "$VM_IP" >"$log" 2>&1
		RC=$?
	else
		# shellcheck disable=SC2086
		ours timeout -k 5 150 "$tool" $ourargs -p "$PORT" >"$log" 2>&1 &
		spid=$!
		for i in $(seq 1 100); do
			ip netns exec "$NS" ss -ltn 2>/dev/null | grep -q ":$PORT " && break
			sleep 0.1
		done
		vmx spawn job -- "$tool $vmargs -p $PORT $BR_IP" >/dev/null
		wait "$spid"
		RC=$?
	fi
	# A failed side leaves the other waiting for it: end the VM's at once.
	[ "$RC" -eq 0 ] || vmx kill job >/dev/null 2>&1
	VOUT=$(vmx wait job -t 180 2>&1)
	VRC=$?
	[ "$RC" -eq 0 ] && [ "$VRC" -eq 0 ]
}

it_log "ibverbs-utils ping-pongs ($ITERS iterations)"
FILTER='iters in'
pair_both rc_pingpong ibv_rc_pingpong "-n $ITERS" -g
pair_both ud_pingpong ibv_ud_pingpong "-s 1000 -n $ITERS" -g

it_log "perftest, no -R ($ITERS iterations)"
FILTER='^ *[0-9]+ +[0-9]+ '
pair_both send_lat ib_send_lat "-F -n $ITERS -s 64" -x
pair_both write_bw ib_write_bw "-F -n $ITERS -s 65536 -t 16" -x
pair_both read_lat ib_read_lat "-F -n $ITERS -s 64" -x
pair_both atomic_lat ib_atomic_lat "-F -n $ITERS" -x

it_log "counters: uroced: $(it_stat "$S" sent_pkts) sent, $(it_stat "$S" rcvd_pkts) received," \
	"$(it_stat "$S" rcvd_icrc_err) ICRC errors"
vmx exec -- 'rdma statistic show link rxe0/1' 2>/dev/null | tr -s ' ' | fold -w 150 |
	sed 's/^/    vm: /'

it_log "exchanges retried once: $RETRIED"
if [ "$IT_FAILS" -ne 0 ]; then
	it_log "rxe_tools: $IT_FAILS exchange(s) failed ($((SECONDS - T0)) s)"
	exit 1
fi
it_log "rxe_tools: all exchanges passed ($((SECONDS - T0)) s)"
exit 0
