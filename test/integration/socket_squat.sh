#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A squatter on the control socket's path gets nothing from an application. While no
# uroced runs, another user (nobody) binds a socket where applications look for one and
# records what comes: in a sticky world-writable folder (as /tmp), and in a folder of its
# own made there. An application (the `uroce` CLI, root's and another user's) must refuse
# to talk: it fails with "Permission denied" and the squatter receives not one byte (no
# HELLO, so no memfd later). And the daemons it must still trust: root's, and one run as
# control.user with its socket in a folder root gave that user (least_privilege.sh runs
# traffic through one).
#
#   socket_squat.sh   (root; binaries from $UROCED, $UROCE_CLI)
# Exit: 0 passed, 1 failed, 77 not root, not built, or no useradd/runuser/python3.
set -u
. "$(dirname "$0")/lib.sh"
it_init socket_squat

it_need_tools "util-linux, python3" runuser python3
USER_APP=uroce-c$$
SVC=uroce-s$$
it_user "$USER_APP" -N || exit 1
it_user "$SVC" --system -U || exit 1
SQUATTER=nobody
chmod 0755 "$IT_DIR"
CLI=$IT_DIR/uroce
install -m 0755 "$UROCE_CLI" "$CLI" || exit 1
# The squatter's program, where it may read it (the checkout may not be).
SQUAT=$IT_DIR/squat_listen.py
install -m 0755 "$(dirname "$0")/squat_listen.py" "$SQUAT" || exit 1
mkdir -m 1777 "$IT_DIR/sticky"

# squat PATH LOG: as $SQUATTER, a server at PATH that logs what it receives to LOG.
squat() {
	runuser -u "$SQUATTER" -- python3 "$SQUAT" "$1" "$2" &
	IT_PIDS+=($!)
	it_wait_until $! 10 grep -qs listening "$2"
}

# app AS PATH: the CLI's devinfo at PATH as AS (root: ourselves); output in $out, status in $rc
app() {
	local u=$1
	if [ "$u" = root ]; then
		out=$(timeout 10 "$CLI" -S "$2" devinfo 2>&1)
	else
		out=$(timeout 10 runuser -u "$u" -- "$CLI" -S "$2" devinfo 2>&1)
	fi
	rc=$?
}

n=0
for where in "$IT_DIR/sticky" "$IT_DIR/sticky/own"; do
	n=$((n + 1))
	if [ "$where" = "$IT_DIR/sticky/own" ]; then
		runuser -u "$SQUATTER" -- mkdir -m 0755 "$where" || exit 1
	fi
	sock=$where/uroce.sock
	log=$IT_DIR/squat$n.log
	install -m 0644 -o "$SQUATTER" /dev/null "$log"
	squat "$sock" "$log" || { it_log "the squatter did not start"; exit 1; }
	for who in root "$USER_APP"; do
		app "$who" "$sock"
		it_check "$who's application at $sock refuses the squatter (exit $rc: $out)" \
			eval '[ "$rc" -ne 0 ] && [[ "$out" == *"Permission denied"* ]]'
	done
	sleep 0.5
	it_check "the squatter received nothing ($(grep -c accepted "$log") connections, $(grep -c received "$log") messages)" \
		eval '! grep -q received "$log"'
done

# ---- the daemons applications must still trust ----------------------------------------------
it_daemon R "" "--vdev=net_null0,no-rx=1" 10.77.44.1 1500 \
	--set control.socket_mode=0666 || exit 1
app "$USER_APP" "$(it_sock R)"
it_check "a root daemon is trusted ($out)" [ "$rc" -eq 0 ]
install -d -m 0755 -o "$SVC" -g "$SVC" "$IT_DIR/run"
it_daemon S "" "--vdev=net_null0,no-rx=1" 10.77.44.2 1500 --set control.socket_mode=0666 \
	--set "control.socket=$IT_DIR/run/S.sock" --set "control.user=$SVC" || exit 1
app "$USER_APP" "$IT_DIR/run/S.sock"
it_check "a daemon of the user root gave its socket folder to is trusted ($out)" [ "$rc" -eq 0 ]

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "socket_squat: all checks passed"
exit 0
