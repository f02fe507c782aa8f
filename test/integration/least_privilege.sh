#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# control.user: a uroced started by root runs, once started, as that user with only the
# capabilities it still needs, and everything still works. Two daemons on a veth pair
# (af_packet), A with a kernel interface (host.kernel_iface), both with control.user set
# to a user the test makes and their sockets in a folder of that user's:
#   - /proc/PID/status: every uid and gid is the user's, no supplementary group,
#     NoNewPrivs 1; B (af_packet alone) keeps no capability at all (CapPrm, CapEff,
#     CapBnd 0); A keeps CAP_NET_ADMIN only (to put its port's sysctls back at exit),
#     in its bounding set too;
#   - RC and UD traffic from A to B, every operation, data checked (uroce-xfer ops);
#   - admin commands of root's: capture start writes the file root's `uroce` opened (and
#     the daemon could not have: the folder is root's, mode 0700), fault, log-level;
#   - an application killed with SIGKILL is cleaned up (clients back to 0);
#   - the tap is there while A runs; SIGTERM: both exit 0, A's port has its rp_filter
#     and arp_ignore back, the tap is gone and the sockets removed;
#   - a socket folder that is not the user's: the daemon refuses to start, and says so.
#
#   least_privilege.sh   (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
# Exit: 0 passed, 1 failed, 77 not root, not built, or no useradd.
set -u
. "$(dirname "$0")/lib.sh"
it_init least_privilege

SVC=uroce-s$$
it_user "$SVC" --system -U || exit 1
svc_uid=$(id -u "$SVC")
svc_gid=$(id -g "$SVC")
chmod 0755 "$IT_DIR"
install -d -m 0755 -o "$SVC" -g "$SVC" "$IT_DIR/run"
SA=$IT_DIR/run/A.sock
SB=$IT_DIR/run/B.sock

it_veth_pair 1500 || exit 1
ip netns exec "$IT_NS_A" sysctl -qw "net.ipv4.conf.$IT_IF_A.rp_filter=2"
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)" 10.77.43.1 1500 \
	--set host.kernel_iface=uroce0 --set "control.socket=$SA" \
	--set "control.user=$SVC" || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)" 10.77.43.2 1500 \
	--set "control.socket=$SB" --set "control.user=$SVC" || exit 1

# status PID FIELD: the value of FIELD in /proc/PID/status (tabs as spaces).
status() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' | tr -s ' ' | sed 's/ $//'; }
ids4() { echo "$1 $1 $1 $1"; }
for d in A B; do
	v=IT_PID_$d
	pid=${!v}
	it_check "$d runs as $SVC: Uid $(status "$pid" Uid)" \
		[ "$(status "$pid" Uid)" = "$(ids4 "$svc_uid")" ]
	it_check "$d: Gid $(status "$pid" Gid)" [ "$(status "$pid" Gid)" = "$(ids4 "$svc_gid")" ]
	it_check "$d: Groups '$(status "$pid" Groups)'" \
		eval '[ "$(status "$pid" Groups)" = "$svc_gid" ] || [ -z "$(status "$pid" Groups)" ]'
	it_check "$d: NoNewPrivs 1" [ "$(status "$pid" NoNewPrivs)" = 1 ]
	it_check "$d: no ambient or inheritable capability" \
		[ "$(status "$pid" CapAmb)$(status "$pid" CapInh)" = 00000000000000000000000000000000 ]
done
# CAP_NET_ADMIN is capability 12.
it_check "B (af_packet): no capability (CapPrm $(status "$IT_PID_B" CapPrm), CapBnd $(status "$IT_PID_B" CapBnd))" \
	[ "$(status "$IT_PID_B" CapPrm)$(status "$IT_PID_B" CapEff)$(status "$IT_PID_B" CapBnd)" = \
		000000000000000000000000000000000000000000000000 ]
it_check "A (kernel_iface): CAP_NET_ADMIN only (CapEff $(status "$IT_PID_A" CapEff), CapBnd $(status "$IT_PID_A" CapBnd))" \
	[ "$(status "$IT_PID_A" CapPrm)$(status "$IT_PID_A" CapEff)$(status "$IT_PID_A" CapBnd)" = \
		000000000000100000000000000010000000000000001000 ]
it_check "A logs what it kept" grep -q "running as user $SVC .*capabilities: cap_net_admin" "$IT_DIR/A.log"
it_check "B logs what it kept" grep -q "running as user $SVC .*capabilities: none" "$IT_DIR/B.log"
it_check "A's tap uroce0 is up" eval 'ip -n "$IT_NS_A" link show uroce0 | grep -q UP'

# ---- applications ------------------------------------------------------------------------
# MRs of at most 4 MiB: a daemon that is not root cannot look at another user's
# /proc/PID/ns/user (ptrace access), so it does not yet see that a root client's
# CAP_IPC_LOCK counts in its user namespace, and holds it to its RLIMIT_MEMLOCK (8 MiB).
PORT=$((20000 + $$ % 20000)) # other tests may run beside this one
XFER=(ops -t 30 -B 4M -z 0,1,64,4096,65536,1M)
it_xfer_pair ops 300 "$SA" "$SB" "$PORT" "${XFER[@]}" -T rc,ud

# ---- administration: the caller opens the file, the daemon writes it ----------------------
install -d -m 0700 "$IT_DIR/rootonly"
pcap=$IT_DIR/rootonly/A.pcap
it_check "capture start as root" "$UROCE_CLI" -S "$SA" capture start "$pcap"
it_xfer_pair ops-captured 300 "$SA" "$SB" $((PORT + 1)) "${XFER[@]}" -c 5 -T rc
it_check "capture stop" "$UROCE_CLI" -S "$SA" capture stop
it_check "the capture, in a folder the daemon's user cannot enter, has frames ($(stat -c %s "$pcap" 2>/dev/null) bytes)" \
	eval '[ "$(stat -c %s "$pcap" 2>/dev/null || echo 0)" -gt 1000 ]'
it_check "fault rx_drop=0" "$UROCE_CLI" -S "$SA" fault rx_drop=0
it_check "log-level info" "$UROCE_CLI" -S "$SA" log-level info

# ---- an application killed outright -------------------------------------------------------
"$UROCE_XFER" -S "$SA" rc_pingpong -p $((PORT + 2)) >"$IT_DIR/victim.out" 2>&1 &
victim=$!
IT_PIDS+=("$victim")
# `uroce stat` counts itself among the clients.
it_wait_until "$victim" 10 eval '[ "$(it_stat "$SA" clients)" = 2 ]'
it_check "the application is connected (clients $(it_stat "$SA" clients))" \
	[ "$(it_stat "$SA" clients)" = 2 ]
sed "s/^/    victim: /" "$IT_DIR/victim.out"
kill -KILL "$victim"
wait "$victim" 2>/dev/null
for i in $(seq 50); do [ "$(it_stat "$SA" clients)" = 1 ] && break; sleep 0.1; done
it_check "its death is cleaned up (clients $(it_stat "$SA" clients))" [ "$(it_stat "$SA" clients)" = 1 ]

# ---- stop ---------------------------------------------------------------------------------
for d in A B; do
	v=IT_PID_$d
	pid=${!v}
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	printf -v "IT_PID_$d" '%s' ""
	it_check "$d: SIGTERM: exit 0 (exit $rc)" [ "$rc" -eq 0 ]
done
it_check "A put its port's rp_filter back ($(ip netns exec "$IT_NS_A" sysctl -n "net.ipv4.conf.$IT_IF_A.rp_filter"))" \
	[ "$(ip netns exec "$IT_NS_A" sysctl -n "net.ipv4.conf.$IT_IF_A.rp_filter")" = 2 ]
it_check "A's tap is gone" eval '! ip -n "$IT_NS_A" link show uroce0 >/dev/null 2>&1'
it_check "the sockets are removed" [ ! -e "$SA" -a ! -e "$SB" ]

# ---- a socket folder that is not the user's ------------------------------------------------
it_daemon C "" "--vdev=net_null0,no-rx=1" 10.77.43.3 1500 \
	--set "control.socket=$IT_DIR/C.sock" --set "control.user=$SVC" >/dev/null 2>&1
it_check "a socket folder of root's: refused at start" eval '[ -z "$IT_PID_C" ] || ! kill -0 "$IT_PID_C" 2>/dev/null'
it_check "and said why" grep -q "control.user $SVC: the socket's folder .* belongs to uid 0" "$IT_DIR/C.log"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "least_privilege: all checks passed"
exit 0
