#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# UCX and libfabric (Debian's packages, unmodified) between uroce and Linux soft-RoCE:
# on our side a uroced and the programs over the drop-in libibverbs.so.1/librdmacm.so.1,
# on the other an rxe VM (QEMU, Debian kernel 6.1 rdma_rxe, rdma-core 44, ucx-utils and
# libfabric-bin; the guest of test/vm) running the same
# programs on rxe. Each case runs twice: the VM serves and we are the client, then we
# serve and the VM is the client.
#   - ucx_perftest, UCT level: am_lat, put_bw and get (zero-copy) over rc_verbs, am_lat
#     over ud_verbs; UCP level with UCX's transport choice (UCX_TLS=^shm,cma,tcp): tag_lat,
#     tag_bw, ucp_put_bw, ucp_get, ucp_am_lat. Each must print its "Final:" line with
#     every iteration done, and our daemon must have sent at least that many packets.
#   - libfabric (test/eco/fi_check.c, built here and copied into the VM): msg (rdma_cm,
#     RC), rdm (verbs;ofi_rxm) and dgram (UD) endpoints, ping-pongs of 1 B .. 64 KiB (dgram:
#     up to the path MTU) checked byte for byte and, msg and rdm, a 1 MiB fi_write checked;
#     and fabtests' fi_pingpong -e msg, 64 B and 64 KiB, data checked.
# The rsocket rows against rxe are in rdmacm_rxe (test/rdmacm/rxe_cm.sh).
#
# Two things of rxe's, set on the VM's side only (doc/ecosystem.md):
#   - rxe's UD completions say 0 in ibv_wc.sl where mlx5 (and uroce) say which IP version
#     the packet was, so UCX on rxe reads an IPv4 packet's GRH area as IPv6 and drops every
#     UD packet as not for it: UCX_UD_ETH_DGID_CHECK=n in the VM. (UCP wires up over UD.)
#   - ucx_perftest's server runs the UCT test on the device the client names: the VM's
#     rxe0 is renamed uroce0 (rdma dev set), so that one name is right on both sides.
#
# Topology: uroced 198.18.0.100 on af_packet rxeveth0, with its kernel interface uroce0
# (host.kernel_iface: the programs' TCP and libfabric's address lookup use our address)
# == bridge rxebr0 (no address, no ARP) == tap == VM eth0/rxe0 (198.18.0.1). Before the
# cases, the VM resolves our address by broadcast and must learn our MAC.
#   test/eco/rxe.sh   (root; $UROCED, $UROCE_CLI, $UROCE_VERBS_LIBDIR, $UROCE_RDMACM_LIBDIR)
# Needs test/vm's image (UROCE_VM_BUILD=1 builds it when missing). Exit: 0, 1, 77 skipped.
set -uo pipefail
unset LD_LIBRARY_PATH # qemu and the helpers must not load ours; only our programs do
. "$(dirname "$0")/../integration/lib.sh"

skip() { echo "eco_rxe: $*; skipped"; exit 77; }
command -v ucx_perftest >/dev/null || skip "ucx_perftest missing (apt-get install ucx-utils)"
command -v fi_pingpong >/dev/null || skip "fi_pingpong missing (apt-get install libfabric-bin)"
[ -f /usr/include/rdma/fabric.h ] || skip "no libfabric headers (apt-get install libfabric-dev)"
it_init eco_rxe
it_rxe_vm_require

cc -O2 -Wall -Wextra -Werror -o "$IT_DIR/fi_check" "$(dirname "$0")/fi_check.c" -lfabric ||
	exit 1

it_rxe_vm_names uxe${IT_ID} uxe${IT_ID}
T0=$SECONDS
it_rxe_vm_up || exit 1
# Our kernel interface carries the subnet; the bridge's own address would be a second
# route to it. Nor may the bridge answer ARP: Linux answers for a local address (our
# kernel interface's) on any interface, with that interface's MAC, sooner than the
# daemon. A VM that asks by broadcast (at first, or when its entry for us has failed)
# learns the bridge's MAC and sends it everything, which the bridge keeps: our frames
# reach the VM and none of its reach us, as in one CI run's eco_rxe from one case on.
ip -n "$NS" addr del "$BR_IP/24" dev rxebr0
ip -n "$NS" link set rxebr0 arp off

# af_packet rings of 8192 frames: UCX busy-polls (test/eco/ucx.sh).
it_daemon R "$NS" "--vdev=net_af_packet0,iface=rxeveth0,framecnt=8192" "$OUR_IP" 1500 \
	--set host.kernel_iface=uroce0 || exit 1
S=$(it_sock R)
ours() {
	ip netns exec "$NS" env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR" \
		UROCE_SOCKET="$S" "$@"
}
# The VM resolves our address by broadcast once, as it does again whenever its entry for us
# fails: what it learns must be our MAC.
our_mac=$(ip netns exec "$NS" cat /sys/class/net/rxeveth0/address)
learnt=$(vmx exec -t 20 -- "ip neigh del $OUR_IP dev eth0 2>/dev/null;" \
	"bash -c 'echo x >/dev/udp/$OUR_IP/9'; for i in \$(seq 50); do" \
	"ip neigh show $OUR_IP dev eth0 | grep -q lladdr && break; sleep 0.1; done;" \
	"ip neigh show $OUR_IP dev eth0" 2>&1)
if [[ $learnt == *"lladdr $our_mac "* ]]; then
	it_log "ok: the VM resolves $OUR_IP to our MAC: $learnt"
else
	it_log "FAILED: the VM resolved $OUR_IP to \"$learnt\", not our MAC $our_mac"
	IT_FAILS=$((IT_FAILS + 1))
fi
vmx exec -- "rdma dev set rxe0 name uroce0" >/dev/null || {
	it_log "cannot rename the VM's rxe0"
	exit 1
}
vmx put "$IT_DIR/fi_check" /tmp/fi_check >/dev/null && vmx exec -- chmod +x /tmp/fi_check ||
	exit 1
VM_ENV="UCX_UD_ETH_DGID_CHECK=n"

# vm_wait_ready PORT READY: until the VM's server is ready, at most 60 s: READY "tcp" waits
# for its TCP listener on PORT (ucx_perftest: its stdout is not flushed before it
# connects), anything else for a line matching it in its output.
vm_wait_ready() {
	local test="grep -Eq '$2' /tmp/job.out 2>/dev/null"
	[ "$2" = tcp ] && test="[ -n \"\$(ss -Hltn 'sport = :$1')\" ]"
	vmx exec -t 70 -- "for i in \$(seq 600); do $test && exit 0; sleep 0.1; done; exit 1" \
		>/dev/null
}
# our_wait_ready PORT READY PID: the same for our server, while PID runs.
our_wait_ready() {
	if [ "$2" = tcp ]; then
		it_wait_listen "$1" "$3" 60 "$NS"
		return
	fi
	it_wait_line "$IT_DIR/ours.out" "$2" "$3" 60
}

# pair LABEL PORT READY "SERVER CMD" "CLIENT CMD" CHECK N: both roles. In the commands
# @PORT@ is this run's port, @ADDR@ the server's address, @FI@ the fi_check binary of the
# side that runs it. The client and the server must exit 0, the client's output must have
# a line matching CHECK (shown), and our daemon must have sent at least N packets
# meanwhile. READY: how to know that the server listens (vm_wait_ready).
VM_FI=/tmp/fi_check

# path_counts: where a frame from the VM to us is counted, in order: "name value" lines.
path_counts() {
	vmx exec -- "cd /sys/class/net/eth0/statistics && echo vm.eth0.tx \$(cat tx_packets)" 2>&1
	local dev st
	for dev in rxetap0:rx rxeveth0-br:tx rxeveth0:rx; do
		for st in packets dropped; do
			echo "ns.${dev%:*}.${dev#*:}_$st $(ip netns exec "$NS" cat \
				"/sys/class/net/${dev%:*}/statistics/${dev#*:}_$st")"
		done
	done
	"$UROCE_CLI" -S "$S" stat 2>/dev/null | awk '$1 ~ /^port\.(ipackets|imissed|rx_nombuf|rx_socket_drops|link_up)$/ ||
		$1 ~ /^daemon\.(rx_non_roce|kernel_rx|sleeps|woke_frame)$/ { print $1, $2 }'
}
# path_probe: after a failed case, 5 datagrams from the VM to us, and how far they got: each
# counter on the way from the VM's eth0 to our daemon before and after, and the MAC the VM
# sends to: where its frames stop when ours reach it and none of its reach us.
path_probe() {
	local before after
	before=$(path_counts)
	echo "    path: the VM sends us 5 datagrams; its neighbour entry for us (our MAC" \
		"$our_mac): $(vmx exec -t 20 -- "bash -c 'for i in 1 2 3 4 5; do echo x >/dev/udp/$OUR_IP/9;" \
			"sleep 0.2; done'; ip neigh show $OUR_IP" 2>&1)"
	after=$(path_counts)
	echo "    path: $(awk 'NR == FNR { b[$1] = $2; next }
		{ printf "%s %s +%d  ", $1, $2, $2 - b[$1] }' <(echo "$before") <(echo "$after"))"
}

pair() {
	local label=$1 port=$2 ready=$3 sargs=$4 cargs=$5 check=$6 n=$7
	local role rc vrc sent0 sent out spid scmd ccmd cout
	for role in rxe-server rxe-client; do
		port=$((port + 1))
		scmd=${sargs//@PORT@/$port}
		ccmd=${cargs//@PORT@/$port}
		sent0=$(it_stat "$S" sent_pkts)
		if [ "$role" = rxe-server ]; then
			scmd=${scmd//@ADDR@/$VM_IP}
			ccmd=${ccmd//@ADDR@/$VM_IP}
			vmx spawn job -- "$VM_ENV timeout 150 ${scmd//@FI@/$VM_FI} >/tmp/job.out 2>&1" \
				>/dev/null
			vm_wait_ready "$port" "$ready" ||
				it_log "  (the VM's server did not say it was ready)"
			# shellcheck disable=SC2086
			ours timeout -k 5 150 ${ccmd//@FI@/$IT_DIR/fi_check} >"$IT_DIR/ours.out" 2>&1
			rc=$?
			[ "$rc" -eq 0 ] || vmx kill job >/dev/null 2>&1
			vmx wait job -t 160 >/dev/null 2>&1
			vrc=$?
			cout=$(cat "$IT_DIR/ours.out")
		else
			scmd=${scmd//@ADDR@/$OUR_IP}
			ccmd=${ccmd//@ADDR@/$OUR_IP}
			# shellcheck disable=SC2086
			ours timeout -k 5 150 ${scmd//@FI@/$IT_DIR/fi_check} >"$IT_DIR/ours.out" 2>&1 &
			spid=$!
			our_wait_ready "$port" "$ready" "$spid" ||
				it_log "  (our server did not say it was ready)"
			vmx exec -t 160 -- \
				"$VM_ENV timeout 150 ${ccmd//@FI@/$VM_FI} >/tmp/job.out 2>&1" >/dev/null 2>&1
			vrc=$?
			wait "$spid"
			rc=$?
			cout=$(vmx exec -- cat /tmp/job.out 2>&1)
		fi
		sent=$(($(it_stat "$S" sent_pkts) - sent0))
		out=$(grep -E "$check" <<<"$cout" | tail -n 1)
		if [ "$rc" -eq 0 ] && [ "$vrc" -eq 0 ] && [ -n "$out" ] && [ "$sent" -ge "$n" ]; then
			it_log "ok: $label/$role: uroced sent $sent packets; client: $out"
		else
			it_log "FAILED: $label/$role: ours exit $rc, rxe exit $vrc, uroced sent $sent" \
				"packets (want >= $n)"
			tail -n 8 "$IT_DIR/ours.out" | sed 's/^/    us:  /'
			vmx exec -- "tail -n 8 /tmp/job.out" 2>&1 | sed 's/^/    rxe: /'
			# How far the connections got, on each side: our CM's counters (REJs,
			# retries, timeouts, refused paths) and the transport's retry counters;
			# rxe's own, from its hardware counters.
			echo "    us:  $(it_stats_prefix "$S" cm. | awk '$2 != 0 { printf "%s %s ", $1, $2 }')"
			echo "    us:  $("$UROCE_CLI" -S "$S" stat 2>/dev/null |
				awk '$1 ~ /retry|seq_err|rnr|wrong|bad/ && $2 != 0 { printf "%s %s ", $1, $2 }')"
			vmx exec -- "grep -H . /sys/class/infiniband/*/ports/1/hw_counters/* 2>/dev/null | grep -v ':0\$' | tr '\n' ' '; echo" 2>&1 |
				sed 's/^/    rxe: /'
			path_probe
			IT_FAILS=$((IT_FAILS + 1))
		fi
	done
}

P=$((21000 + (IT_ID % 100) * 40))
ITER=200
UCT="-d uroce0:1"
UCP_ENV="UCX_NET_DEVICES=uroce0:1 UCX_TLS=^shm,cma,tcp"
FINAL="^Final: +$ITER "
# ucx_perftest's client gives the server the test; a UCP server names its own device.
for spec in "uct_am_lat_rc|$UCT -x rc_verbs -t am_lat" \
	"uct_put_bw_rc|$UCT -x rc_verbs -t put_bw -s 65536 -D zcopy" \
	"uct_get_rc|$UCT -x rc_verbs -t get -s 65536 -D zcopy" \
	"uct_am_lat_ud|$UCT -x ud_verbs -t am_lat" \
	"ucp_tag_lat|-t tag_lat" "ucp_tag_bw|-t tag_bw -s 65536" "ucp_put_bw|-t ucp_put_bw -s 65536" \
	"ucp_get|-t ucp_get -s 65536" "ucp_am_lat|-t ucp_am_lat"; do
	label=${spec%%|*}
	args=${spec#*|}
	envs=
	[[ $label == ucp_* ]] && envs="env $UCP_ENV "
	pair "$label" "$P" tcp "${envs}ucx_perftest -p @PORT@" \
		"${envs}ucx_perftest @ADDR@ -p @PORT@ $args -n $ITER" "$FINAL" "$ITER"
	P=$((P + 2))
done

# fi_check: server ADDR PORT ITERS MODE; the client's FI_UNIVERSE_SIZE as in
# test/eco/libfabric.sh (rxm sizes its CQs by it; rxe's max_cqe is 32767).
for mode in msg rdm dgram; do
	pair "fi_$mode" "$P" "server listening" \
		"env FI_UNIVERSE_SIZE=16 @FI@ server @ADDR@ @PORT@ $ITER $mode" \
		"env FI_UNIVERSE_SIZE=16 @FI@ client @ADDR@ @PORT@ $ITER $mode" "^fi_check: ok" \
		"$ITER"
	P=$((P + 2))
done

# fabtests' fi_pingpong over the verbs provider's msg endpoint, the server given no address
# (doc/ecosystem.md: the provider binds rdma_cm to 127.0.0.1 first, as on Linux), data
# checked (-c). No -d: the VM's device is uroce0 here too.
for size in 64 65536; do
	pair "fi_pingpong_msg_$size" "$P" tcp \
		"fi_pingpong -p verbs -e msg -I 100 -S $size -c -B @PORT@" \
		"fi_pingpong -p verbs -e msg -I 100 -S $size -c -P @PORT@ @ADDR@" \
		"^[0-9.]+[kmg]? +100 +=100 " 100
	P=$((P + 2))
done

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "eco_rxe: $IT_FAILS case(s) failed ($((SECONDS - T0)) s)"
	exit 1
fi
it_log "eco_rxe: all cases passed ($((SECONDS - T0)) s)"
exit 0
