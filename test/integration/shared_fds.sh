#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No client can freeze uroced through a descriptor it was given. O_NONBLOCK and an
# eventfd's count belong to the open file, not to the descriptor: a daemon that hands a
# client an open file it reads or writes itself can be made to block in it. A root
# daemon on net_null with a socket everyone may connect to (mode 0666); fd_tamper, under
# a user the test makes, takes every descriptor HELLO, CREATE_CHANNEL and
# CM_CREATE_CHANNEL hand out, clears O_NONBLOCK on each (F_SETFL 0) and writes 2^64 - 2
# wherever the kernel lets it, has the daemon signal its CM channel, and holds them.
# Meanwhile, with the daemon sleeping in every idle gap (the default):
#   - root's `uroce stat` answers, twice, 2 s apart;
#   - an RC ping-pong (uroce-xfer rc_pingpong, waiting on completion events: -e) between
#     two of root's processes completes;
#   - the write into every daemon-to-client descriptor was refused (the read end of a
#     pipe: "Bad file descriptor").
# After SIGKILL of the attacker the daemon is alive, answers, and is back to one client
# less. (Against the daemon that shared its eventfds, the poll thread blocked in the read
# of its own wake eventfd: every stat timed out, and the daemon stayed hung.)
#
#   shared_fds.sh    (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI, $FD_TAMPER)
# Exit: 0 passed, 1 failed, 77 not root, not built, or no useradd.
set -u
. "$(dirname "$0")/lib.sh"
it_init shared_fds

it_need_built "${FD_TAMPER:-}"
it_need_tools util-linux setpriv
ATTACKER=uroce-fd$$
it_user "$ATTACKER" -N || exit 1
# The attacker runs from a copy in the test's own directory: the checkout may sit in a
# folder other users cannot enter.
chmod 0755 "$IT_DIR"
install -m 0755 "$FD_TAMPER" "$IT_DIR/fd_tamper" || exit 1

IP=10.77.11.1
it_daemon A "" "--vdev=net_null0,no-rx=1" "$IP" 1500 --set control.socket_mode=0666 || exit 1
S=$(it_sock A)
# A frozen daemon answers nothing: every request has a deadline.
stat_ok() { timeout -k 2 10 "$UROCE_CLI" -S "$S" stat >/dev/null 2>&1; }
stat_of() {
	timeout -k 2 10 "$UROCE_CLI" -S "$S" stat 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'
}
clients() { stat_of clients; }

clients0=$(clients)
# setpriv execs: $! is the attacker itself, the process to kill.
setpriv --reuid="$ATTACKER" --regid="$(id -g "$ATTACKER")" --clear-groups \
	"$IT_DIR/fd_tamper" "$S" "$IP" >"$IT_DIR/attacker.out" 2>&1 &
apid=$!
it_wait_line "$IT_DIR/attacker.out" '^fd_tamper: tampered' "$apid" 20
clients1=$(clients)
sed 's/^/    /' "$IT_DIR/attacker.out"
it_check "the attacker took and tampered with its descriptors" \
	grep -q '^fd_tamper: tampered' "$IT_DIR/attacker.out"
it_check "its CM channel was signalled (CM_RESOLVE_ADDR answered)" \
	grep -q '^fd_tamper: CM_RESOLVE_ADDR: done' "$IT_DIR/attacker.out"
for what in "HELLO fd 1" "CREATE_CHANNEL fd" "CM_CREATE_CHANNEL fd"; do
	it_check "$what: only the read end of a pipe, no write went in" \
		grep -q "^fd_tamper: $what .*write 2^64-2 Bad file descriptor" "$IT_DIR/attacker.out"
done

sleep 1 # the daemon sleeps and wakes many times meanwhile
it_check "another tenant's uroce stat answers beside the attacker" stat_ok
it_xfer_pair rc_pingpong-events 30 "$S" "$S" 19511 rc_pingpong -e -n 200 -s 1024 -t 20
sleep 2
it_check "and answers still, 2 s later" stat_ok
it_check "the attacker is still there, holding its descriptors" kill -0 "$apid"
it_check "a client of the daemon (clients $clients1, before $clients0)" \
	test "$clients1" = $((clients0 + 1))

kill -KILL "$apid"
wait "$apid" 2>/dev/null
apid=
it_check "the daemon is alive after the attacker is killed" kill -0 "$IT_PID_A"
it_check "and answers" stat_ok
clients_back() { [ "$(clients)" = "$clients0" ]; }
it_wait_until "$IT_PID_A" 10 clients_back
it_check "and dropped the attacker's connection (clients $(clients), before $clients0)" \
	test "$(clients)" = "$clients0"
it_log "daemon.event_pipe_full $(stat_of daemon.event_pipe_full)," \
	"sleeps $(stat_of daemon.sleeps), woke_doorbell $(stat_of daemon.woke_doorbell)"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "shared_fds: all checks passed"
exit 0
