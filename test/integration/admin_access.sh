#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Who may administer a root uroced. A daemon on a net_null port with a socket everyone
# may connect to (mode 0666) and control.admin_group set; three callers of the same
# unmodified `uroce` CLI:
#   - an unprivileged user (useradd, no groups): capture start, fault, log-level and
#     cm-drop each fail with "Operation not permitted", the capture file is not created,
#     no fault is set, and the daemon counts four refusals and nothing else;
#   - a member of the admin group: all four succeed, and the capture file is the
#     member's own (the CLI opened it and handed the daemon the descriptor);
#   - root: the same.
# And the pid a client claims in HELLO is not believed: a client claiming pid 1 is
# logged with its real pid. Connections that never say HELLO are closed after 10 s. And
# the device node a daemon makes for middleware has its socket's mode and group, and goes
# with it. And the socket's folder: one another user may write is refused; one reached
# through a symlink that user owns is used by its real path, so repointing the link
# redirects nothing; uroced changes no file's owner or mode by name at all.
#
#   admin_access.sh            (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
# Exit: 0 passed, 1 failed, 77 not root, not built, or no useradd.
set -u
. "$(dirname "$0")/lib.sh"
it_init admin_access

it_need_tools "util-linux, python3" runuser python3
USER_PLAIN=uroce-t$$
USER_ADMIN=uroce-a$$
GROUP_ADMIN=uroce-g$$
it_group "$GROUP_ADMIN" || exit 1
it_user "$USER_PLAIN" -N || exit 1
it_user "$USER_ADMIN" -N -G "$GROUP_ADMIN" || exit 1
# The test's own directory: readable by the users, and a place where each may write.
# The CLI runs from a copy there (it needs only libc): the checkout may sit in a folder
# other users cannot enter.
chmod 0755 "$IT_DIR"
mkdir -m 1777 "$IT_DIR/drop"
CLI=$IT_DIR/uroce
install -m 0755 "$UROCE_CLI" "$CLI" || exit 1

it_daemon A "" "--vdev=net_null0,no-rx=1" 10.77.9.1 1500 \
	--set control.socket_mode=0666 --set "control.admin_group=$GROUP_ADMIN" || exit 1
S=$(it_sock A)

# as USER CMD...: the CLI as USER (root: as ourselves); its output in $out, status in $rc
as() {
	local u=$1
	shift
	if [ "$u" = root ]; then
		out=$("$CLI" -S "$S" "$@" 2>&1)
	else
		out=$(runuser -u "$u" -- "$CLI" -S "$S" "$@" 2>&1)
	fi
	rc=$?
}
stat_of() { "$UROCE_CLI" -S "$S" stat | awk -v k="$1" '$1 == k { print $2 }'; }
fault_lines() { grep -c 'fault injection:' "$IT_DIR/A.log"; }

# ---- an unprivileged user ---------------------------------------------------------------
faults_before=$(fault_lines)
pcap=$IT_DIR/drop/plain.pcap
as "$USER_PLAIN" capture start "$pcap"
it_check "unprivileged capture start refused ($out)" \
	test "$rc" -ne 0 -a -n "$(echo "$out" | grep 'Operation not permitted')"
it_check "no capture file was created" test ! -e "$pcap"
as "$USER_PLAIN" fault rx_drop=1
it_check "unprivileged fault refused ($out)" \
	test "$rc" -ne 0 -a -n "$(echo "$out" | grep 'Operation not permitted')"
as "$USER_PLAIN" log-level debug
it_check "unprivileged log-level refused ($out)" \
	test "$rc" -ne 0 -a -n "$(echo "$out" | grep 'Operation not permitted')"
as "$USER_PLAIN" cm-drop REQ 5
it_check "unprivileged cm-drop refused ($out)" \
	test "$rc" -ne 0 -a -n "$(echo "$out" | grep 'Operation not permitted')"
it_check "four refusals counted (daemon.admin_refused $(stat_of daemon.admin_refused))" \
	test "$(stat_of daemon.admin_refused)" = 4
it_check "no fault was set" test "$(fault_lines)" = "$faults_before"
it_check "nothing captured, nothing dropped" \
	test "$(stat_of daemon.capture_frames)" = 0 -a "$(stat_of daemon.cm_dropped)" = 0
as "$USER_PLAIN" stat
it_check "the unprivileged user still uses the device (stat)" test "$rc" -eq 0

# ---- a member of control.admin_group, then root ----------------------------------------
for who in "$USER_ADMIN" root; do
	pcap=$IT_DIR/drop/$who.pcap
	as "$who" capture start "$pcap"
	it_check "$who: capture start ($out)" test "$rc" -eq 0 -a -f "$pcap"
	it_check "$who: the capture file is the caller's own" \
		test "$(stat -c %U "$pcap")" = "$who"
	as "$who" capture stop
	it_check "$who: capture stop ($out)" test "$rc" -eq 0
	it_check "$who: a pcap file header was written" test "$(stat -c %s "$pcap")" -ge 24
	as "$who" fault rx_drop=0.5
	it_check "$who: fault ($out)" test "$rc" -eq 0
	as "$who" fault
	it_check "$who: fault off ($out)" test "$rc" -eq 0
	as "$who" log-level info
	it_check "$who: log-level ($out)" test "$rc" -eq 0
	as "$who" cm-drop REQ 0
	it_check "$who: cm-drop ($out)" test "$rc" -eq 0
done
it_check "still four refusals" test "$(stat_of daemon.admin_refused)" = 4

# ---- the kernel's pid, not the claimed one ----------------------------------------------
python3 - "$S" >"$IT_DIR/liar.out" 2>&1 <<'EOF'
import os, socket, struct, sys, time
MAGIC, HELLO = 0x75637472, 1
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
# uroce_ctrl_hdr {magic, version, cmd, len, seq, status, reserved} + hello {version, pid, name[32]}
name = b"liar".ljust(32, b"\0")
for version in range(1, 16):  # whatever this build speaks: the daemon answers -EPROTO otherwise
    body = struct.pack("<Ii32s", version, 1, name)
    hdr = struct.pack("<IHHIIiI", MAGIC, version, HELLO, 24 + len(body), 1, 0, 0)
    s.send(hdr + body)
    rep = s.recv(4096)
    status = struct.unpack_from("<i", rep, 16)[0]
    if status == 0:
        print("hello accepted, version", version, "real pid", os.getpid())
        break
    s.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
s.close()
print(os.getpid())
EOF
liar_pid=$(tail -n 1 "$IT_DIR/liar.out")
sleep 0.5
it_check "a client claiming pid 1 is logged with its real pid $liar_pid" \
	grep -q "client liar\[$liar_pid\]" "$IT_DIR/A.log"
it_check "and never as pid 1" test -z "$(grep 'client liar\[1\]' "$IT_DIR/A.log")"

# ---- connections that never say HELLO --------------------------------------------------
# Each holds one of control.max_clients: three silent ones (an unprivileged user's) are
# closed after 10 s, while an application that speaks is served meanwhile.
runuser -u "$USER_PLAIN" -- python3 - "$S" >"$IT_DIR/silent.out" 2>&1 <<'EOF' &
import socket, sys, time
socks = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
t0 = time.monotonic()
for s in socks:
    s.settimeout(30)
    print("closed" if s.recv(64) == b"" else "data", round(time.monotonic() - t0, 1))
EOF
spid=$!
sleep 1
as root stat
it_check "a client that speaks is served beside them" test "$rc" -eq 0
wait "$spid"
sed 's/^/    silent connection: /' "$IT_DIR/silent.out"
it_check "the three silent connections were closed by the daemon" \
	test "$(grep -c '^closed' "$IT_DIR/silent.out")" = 3
it_check "after 10 s, not before ($(head -n 1 "$IT_DIR/silent.out"))" \
	awk '$1 == "closed" && $2 >= 8 && $2 <= 15 { n++ } END { exit n != 3 }' "$IT_DIR/silent.out"
it_check "counted: daemon.clients_silent $(stat_of daemon.clients_silent)" \
	test "$(stat_of daemon.clients_silent)" = 3

# ---- the device node middleware looks for (UCX) -----------------------------------------
# A daemon whose socket only a group may use: its node has that mode and group, so the
# same users may open it, and it goes when the daemon stops.
it_daemon N "" "--vdev=net_null0,no-rx=1" 10.77.9.2 1500 \
	--set control.socket_mode=0660 --set "control.socket_group=$GROUP_ADMIN" || exit 1
node=$(sed -n 's|^uroced: info: device node ||p' "$IT_DIR/N.log" | head -n 1)
it_check "a device node was made ($node)" test -n "$node" -a -c "$node"
case $node in /dev/infiniband/uverbs-????????????????) ok=1 ;; *) ok=0 ;; esac
it_check "named uverbs-<node GUID> in /dev/infiniband" test "$ok" = 1
it_check "with the socket's mode and group, /dev/null's numbers ($(stat -c '%a %G %t:%T' "$node"))" \
	test "$(stat -c '%a %G %t:%T' "$node")" = "660 $GROUP_ADMIN 1:3"
it_check "a member of the socket's group may read and write it" \
	runuser -u "$USER_ADMIN" -- test -r "$node" -a -w "$node"
it_check "a user outside it may not" runuser -u "$USER_PLAIN" -- test ! -r "$node" -a ! -w "$node"
node_a=$(sed -n 's|^uroced: info: device node ||p' "$IT_DIR/A.log" | head -n 1)
it_check "the first daemon has its own ($node_a)" test "$node_a" != "$node" -a -c "$node_a"
it_stop_daemon N
it_check "the node is gone when the daemon stops" test ! -e "$node"
it_check "the first daemon's stays" test -c "$node_a"

# A daemon killed before it could remove its node (SIGKILL, a crash) leaves it behind,
# and middleware would list a device nobody serves: the next daemon to start removes
# every node no live daemon holds (each holds a lock on its own), and no other.
it_daemon K "" "--vdev=net_null0,no-rx=1" 10.77.9.5 1500 || exit 1
node_k=$(sed -n 's|^uroced: info: device node ||p' "$IT_DIR/K.log" | head -n 1)
kill -KILL "$IT_PID_K"
it_reap "$IT_PID_K"
IT_PID_K=
it_check "a killed daemon leaves its node ($node_k)" test -c "$node_k"
held=/dev/infiniband/uverbs-00005e00ffff0001
rm -f "$held"
mknod -m 0600 "$held" c 1 3
exec {held_fd}<"$held" # this shell holds the lock, as a live daemon holds its own
flock -n "$held_fd" || exit 1
it_daemon N "" "--vdev=net_null0,no-rx=1" 10.77.9.2 1500 || exit 1
it_check "the next daemon removed it ($(grep -c 'device node(s) of daemons that were killed' \
	"$IT_DIR/N.log") sweep logged)" test ! -e "$node_k"
it_check "a node whose lock is held stays" test -c "$held"
it_check "so does the first daemon's" test -c "$node_a"
it_check "and the new daemon's own" test -c "$(sed -n 's|^uroced: info: device node ||p' \
	"$IT_DIR/N.log" | head -n 1)"
exec {held_fd}<&-
rm -f "$held"
it_stop_daemon N

# ---- the socket's folder ----------------------------------------------------------------
# Between a bind() and a chown() by name, a user who may write in the folder could put a
# symlink in the socket's place and be given /etc/shadow: the socket is born with its group
# and mode instead, and the folder must be one only root may change.
it_check "uroced calls no chown or chmod by name (imports: $(nm -D --undefined-only "$UROCED" |
	grep -oE '\b(l|f)?ch(own|mod)(at)?\b' | sort -u | tr '\n' ' '))" \
	test -z "$(nm -D --undefined-only "$UROCED" | grep -E '\b(l?chown|chmod|fchownat|fchmodat)\b')"
mine=$IT_DIR/mine
mkdir -m 0755 "$mine" && chown "$USER_PLAIN" "$mine"
it_daemon U "" "--vdev=net_null0,no-rx=1" 10.77.9.3 1500 \
	--set "control.socket=$mine/uroce.sock"
urc=$?
it_check "a socket in a folder another user owns is refused" test "$urc" -ne 0
it_check "with the reason said" grep -q "another user could replace the socket" "$IT_DIR/U.log"
it_check "and nothing made there" test -z "$(ls -A "$mine")"
mkdir -m 0755 "$IT_DIR/real"
ln -s "$IT_DIR/real" "$mine/link"
chown -h "$USER_PLAIN" "$mine/link"
it_daemon L "" "--vdev=net_null0,no-rx=1" 10.77.9.4 1500 --set control.socket_mode=0660 \
	--set "control.socket=$mine/link/uroce.sock" --set "control.socket_group=$GROUP_ADMIN" ||
	exit 1
real_sock=$IT_DIR/real/uroce.sock
it_check "through the user's symlink, the socket is made at its real path" test -S "$real_sock"
it_check "born with the group and mode asked ($(stat -c '%a %G' "$real_sock"))" \
	test "$(stat -c '%a %G' "$real_sock")" = "660 $GROUP_ADMIN"
as "$USER_ADMIN" stat
it_check "a member of the socket's group connects (through the link)" test "$rc" -eq 0
runuser -u "$USER_PLAIN" -- sh -c "mkdir '$mine/decoy' && ln -sfn '$mine/decoy' '$mine/link'"
touch "$mine/decoy/uroce.sock"
it_stop_daemon L
it_check "the link repointed, the daemon removes its own socket" test ! -e "$real_sock"
it_check "and leaves the user's file alone" test -f "$mine/decoy/uroce.sock"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed; liar: $(cat "$IT_DIR/liar.out")"
	exit 1
fi
it_log "admin_access: all checks passed"
exit 0
