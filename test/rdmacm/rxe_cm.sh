#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rdma_cm against Linux soft-RoCE, both roles: on our side the unmodified Debian tools
# (rdmacm-utils, perftest -R) over the drop-in librdmacm.so.1 + libibverbs.so.1 and a
# uroced; on the other an rxe VM (QEMU, Debian kernel 6.1 rdma_rxe and rdma_cm, rdma-core
# 44; the guest of test/vm) running the same tools on
# rxe0. Connection setup is the IB CM on QP1 both ways (REQ/REP/RTU/DREQ/DREP; SIDR for
# udaddy); nothing goes over TCP. Each tool runs
# twice: the VM listens and we connect, then we listen and the VM connects.
#   rping, ucmatose, udaddy, rdma_server/rdma_client, cmtime, rstream and riostream
#   (rsockets), perftest -R (ib_send_lat, ib_write_bw, ib_read_lat, ib_atomic_lat,
#   ib_send_bw -c UD)
# Our side's CM exchange is captured (uroced's pcap) and decoded with tshark: every CM
# MAD must decode with no malformed packet and no expert error.
#
# Topology as test/verbs/rxe_tools.sh (doc/interop.md): uroced 198.18.0.100 on af_packet
# rxeveth0 == bridge rxebr0 (198.18.0.254) == tap == VM eth0/rxe0 (198.18.0.1).
#   test/rdmacm/rxe_cm.sh   (root; qemu-system-x86_64; test/vm's image built once)
# Env: RDMACM_LIB_DIR, VERBS_LIB_DIR, UROCED, UROCE_CLI, CONNECT_DELAY_LIB (the shim
# test/rdmacm/connect_delay.c builds); ITERS (default 20);
# TOOLS_ONLY="regex"; OUT=FILE (a copy of the log, for doc/). Exit: 0, 1, 77 skipped.
set -uo pipefail
unset LD_LIBRARY_PATH # qemu and the helpers must not load ours; only our tools do
. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${RDMACM_LIB_DIR:=$IT_ROOT/build/lib/rdmacm}"
: "${TOOLS_ONLY:=}"
: "${ITERS:=20}"

skip() { echo "rxe_cm: $*; skipped"; exit 77; }
command -v tshark >/dev/null || skip "tshark missing"
it_init rxe_cm
for t in rping ucmatose udaddy rdma_server rdma_client rstream riostream ib_send_lat \
	ib_write_bw ib_read_lat ib_atomic_lat ib_send_bw; do
	command -v "$t" >/dev/null || skip "$t not installed (rdmacm-utils, perftest)"
done
[ -e "$RDMACM_LIB_DIR/librdmacm.so.1" ] || skip "$RDMACM_LIB_DIR/librdmacm.so.1 not built"
it_rxe_vm_require

it_rxe_vm_names uxc${IT_ID} uxw${IT_ID}
PCAP=$IT_DIR/cm.pcap
if [ -n "${OUT:-}" ]; then
	exec > >(tee "$OUT") 2>&1
fi

T0=$SECONDS
it_rxe_vm_up || exit 1

it_daemon R "$NS" "--vdev=net_af_packet0,iface=rxeveth0" "$OUR_IP" 1500 || exit 1
S=$(it_sock R)
"$UROCE_CLI" -S "$S" capture start "$PCAP" || exit 1
# OURS_PRELOAD (the perftest cases): test/rdmacm/connect_delay.c, rdma_connect waits 0.5 s.
OURS_PRELOAD=
ours() {
	ip netns exec "$NS" env LD_LIBRARY_PATH="$RDMACM_LIB_DIR:$VERBS_LIB_DIR" \
		${OURS_PRELOAD:+LD_PRELOAD=$OURS_PRELOAD UROCE_TEST_CONNECT_DELAY_MS=500} \
		UROCE_SOCKET="$S" "$@"
}
want() { [ -z "$TOOLS_ONLY" ] || [[ $1 =~ $TOOLS_ONLY ]]; }

# The VM's rdma_cm has a listener on PORT (rdma_cm ids are not sockets: ss cannot see them).
vm_listening() {
	vmx exec -t 60 -- "for i in \$(seq 300); do rdma res show cm_id 2>/dev/null | grep -Eq 'state LISTEN .*src-addr [^ ]*:$1( |\$)' && exit 0; sleep 0.1; done; exit 1" >/dev/null
}

# pair LABEL PORT "SERVER ARGS" "CLIENT ARGS(with @ADDR@)" TOOL [CLIENT_TOOL]: both roles.
# SERVER_STAYS set: the server never exits by itself (cmtime); the client's exit decides,
# and the server must still be running at the end.
SERVER_STAYS=
# A failed exchange is tried up to three times (counted in RETRIED and shown): perftest
# -R's client opens its data connection right after the first one, and the TCG VM's
# server can be late to listen again for it: rxe answers REJ, reason 8 (in the capture).
# perftest's client then retries on ids it has freed (its cma_id pointer read back the
# bytes of a sockaddr in a core dump) and crashes: exit 139 on our side.
RETRIED=0
pair() {
	local label=$1 port=$2 sargs=$3 cargs=$4 tool=$5 ctool=${6:-$5} role rc vrc vout spid
	for role in rxe-server rxe-client; do
		want "$label/$role" || continue
		for attempt in 1 2 3; do
		T1=$SECONDS
		vrc=
		vout=
		if [ "$role" = rxe-server ]; then
			vmx spawn job -- "$tool $sargs" >/dev/null
			vm_listening "$port" || it_log "  (no LISTEN id seen in the VM on port $port)"
			# shellcheck disable=SC2086
			ours timeout -k 5 120 $ctool ${cargs//@ADDR@/$VM_IP} >"$IT_DIR/ours.out" 2>&1
			rc=$?
			if [ -n "$SERVER_STAYS" ] && [ "$rc" -eq 0 ]; then
				vmx kill job >/dev/null 2>&1
				vmx wait job -t 30 >/dev/null 2>&1
				vout="(the VM's server was serving at the end and was stopped)"
				vrc=0
			fi
		else
			# shellcheck disable=SC2086
			ours timeout -k 5 150 $tool $sargs >"$IT_DIR/ours.out" 2>&1 &
			spid=$!
			sleep 1.5 # our listener is up well within this (the VM is the slow side)
			vmx spawn job -- "$ctool ${cargs//@ADDR@/$OUR_IP}" >/dev/null
			if [ -n "$SERVER_STAYS" ]; then
				vout=$(vmx wait job -t 150 2>&1)
				vrc=$?
				if kill -0 "$spid" 2>/dev/null; then
					kill "$spid"
					wait "$spid"
					rc=0
				else
					wait "$spid"
					rc=$?
				fi
			else
				wait "$spid"
				rc=$?
			fi
		fi
		if [ -z "$SERVER_STAYS" ] || [ "$role" = rxe-server ] && [ -z "${vrc:-}" ]; then
			[ "$rc" -eq 0 ] || vmx kill job >/dev/null 2>&1
			vout=$(vmx wait job -t 150 2>&1)
			vrc=$?
		fi
		if [ "$rc" -eq 0 ] && [ "$vrc" -eq 0 ]; then
			it_log "PASS $label/$role ($((SECONDS - T1)) s): $tool$([ "$attempt" -gt 1 ] && echo " (attempt $attempt)")"
			grep -E "$FILTER" "$IT_DIR/ours.out" | tail -n "$SHOW" | sed 's/^/    us:  /'
			echo "$vout" | grep -E "$FILTER" | tail -n "$SHOW" | sed 's/^/    rxe: /'
			break
		fi
		it_log "FAIL $label/$role (attempt $attempt): ours exit $rc, rxe exit $vrc"
		tail -n 12 "$IT_DIR/ours.out" | sed 's/^/    us:  /'
		echo "$vout" | tail -n 12 | sed 's/^/    rxe: /'
		"$UROCE_CLI" -S "$S" stat 2>/dev/null | awk '$1 ~ /^cm\./ && $2 != 0' |
			tr '\n' ' ' | fold -w 150 | sed 's/^/    uroced: /'
		echo
		if [ "$attempt" -lt 3 ]; then
			RETRIED=$((RETRIED + 1))
		else
			IT_FAILS=$((IT_FAILS + 1))
		fi
		done
	done
}

P=$((19000 + (IT_ID % 100) * 20))
SHOW=3
FILTER='ping data|connect|complete|success|^ *[0-9]+ +[0-9]+ '
pair rping $((P + 1)) "-s -v -V -C $ITERS -S 64 -p $((P + 1))" \
	"-c -v -V -C $ITERS -S 64 -a @ADDR@ -p $((P + 1))" rping
FILTER='connect|complete|data transfers|disconnect'
pair ucmatose $((P + 2)) "-p $((P + 2)) -c 2 -C 10" "-s @ADDR@ -p $((P + 2)) -c 2 -C 10" ucmatose
# udaddy has no port option: it always uses 7174 (rxe-vm README).
pair udaddy 7174 "-c 2 -C 10" "-s @ADDR@ -c 2 -C 10" udaddy
FILTER='.'
pair rdma_server $((P + 3)) "-p $((P + 3))" "-s @ADDR@ -p $((P + 3))" rdma_server rdma_client
# cmtime: connection setup and teardown, step by step (the VM runs under TCG: its
# figures say it works, not how fast rxe is).
FILTER='^(step|create|bind|resolve|connect|disconnect|destroy|cm )'
P=$((P + 4))
SHOW=12
SERVER_STAYS=1
pair cmtime $P "-p $P -c 20" "-s @ADDR@ -p $P -c 20" cmtime
SERVER_STAYS=
# rsockets: rdma-core's rstream and riostream in the VM (Linux rsockets over rxe) against
# ours, data verified (-T v): the wire protocol (connection data, credits, SGL and iomap
# updates, DISCONNECT) is rdma-core's on both sides.
FILTER='^custom'
SHOW=1
P=$((P + 1))
pair rstream $P "-p $P -S 100000 -C 20 -T v" "-s @ADDR@ -p $P -S 100000 -C 20 -T v" rstream
P=$((P + 1))
pair riostream $P "-p $P -S 100000 -C 10 -T v" "-s @ADDR@ -p $P -S 100000 -C 10 -T v" \
	riostream
FILTER='^ *[0-9]+ +[0-9]+ '
SHOW=3
# perftest -R's client connects its data QP right after its out-of-band handshake, and
# its server only then listens: the VM's server loses that race often (REJ, no listener)
# where a real machine does not. Our client waits 0.5 s before rdma_connect (a preloaded
# shim; nothing of uroce changes). Without the shim the case still passes, only not
# every time (doc/rdmacm.md).
if [ -n "${CONNECT_DELAY_LIB:-}" ] && [ -e "$CONNECT_DELAY_LIB" ]; then
	OURS_PRELOAD=$CONNECT_DELAY_LIB
else
	it_log "  (no connect-delay shim: perftest cases may need more than one attempt)"
fi
for spec in "send_lat:ib_send_lat:-s 64" "write_bw:ib_write_bw:-s 65536 -t 16" \
	"read_lat:ib_read_lat:-s 64" "atomic_lat:ib_atomic_lat:" "ud_send_bw:ib_send_bw:-c UD -s 512"; do
	IFS=: read -r label tool args <<<"$spec"
	P=$((P + 1))
	pair "$label" "$P" "-R -F -n $ITERS $args -p $P" "-R -F -n $ITERS $args -p $P @ADDR@" \
		"$tool"
done

"$UROCE_CLI" -S "$S" capture stop >/dev/null
it_log "CM counters: $("$UROCE_CLI" -S "$S" stat 2>/dev/null | awk '$1 ~ /^cm\./ && $2 != 0 { printf "%s=%s ", substr($1, 4), $2 }')"
# Every CM MAD in the capture must decode: no malformed packet, no expert error.
# (tshark dissects UDP 4791 as RoCEv2 by itself.)
MADS=$(tshark -r "$PCAP" --disable-protocol rpcordma \
	-Y 'infiniband.bth.destqp == 1' 2>/dev/null | wc -l)
BAD=$(tshark -r "$PCAP" --disable-protocol rpcordma \
	-Y 'infiniband.bth.destqp == 1 && (_ws.malformed || _ws.expert.severity >= error)' \
	2>/dev/null | wc -l)
KINDS=$(tshark -r "$PCAP" --disable-protocol rpcordma \
	-Y 'infiniband.bth.destqp == 1' -T fields -e infiniband.mad.attributeid 2>/dev/null |
	sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
it_log "failed attempts that a later one made good: $RETRIED"
it_log "capture: $MADS CM MADs on QP1 ($KINDS), $BAD that tshark marks malformed or in error"
[ "$MADS" -gt 0 ] && [ "$BAD" -eq 0 ] || IT_FAILS=$((IT_FAILS + 1))
if [ "$IT_FAILS" -ne 0 ]; then
	it_log "rxe_cm: $IT_FAILS case(s) failed ($((SECONDS - T0)) s)"
	exit 1
fi
it_log "rxe_cm: all cases passed ($((SECONDS - T0)) s)"
exit 0
