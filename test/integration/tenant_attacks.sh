#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 43's attacks on the root daemon's memory and limits, each made by a tenant under
# a uid of its own (useradd) through the control socket (tenant_attack.c), against one
# uroced on a net_null port with a socket everyone may use (mode 0666):
#   reg_mr_wrap   REG_MR pieces whose lengths sum past 2^64 to one page: EINVAL (the old
#                 daemon mapped the tenant's memfd over its own libraries and died);
#   unimport      register, import elsewhere, unimport the original, repeat, under
#                 ulimit -l 2048: ENOMEM at the third MiB (the charge moves, never
#                 vanishes);
#   mappings      REG_MRs of 1,024 pieces from process after process: ENOMEM at
#                 limits.mappings (16 of them), not at vm.max_map_count, where every
#                 other tenant fails too;
#   connections   HELLO after HELLO: EAGAIN at limits.clients (64), while max_clients
#                 (256) leaves room.
# After each, the daemon is alive and another tenant (root, and a second user) gets
# served: `uroce stat` and an RC ping-pong over the daemon's loopback.
#
#   tenant_attacks.sh   (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI, $TENANT_ATTACK)
#   ATTACKS="unimport connections" tenant_attacks.sh   only those (each alone shows its
#                                                      own failure on an old daemon)
# Exit: 0 passed, 1 failed, 77 not root, not built, or no useradd.
set -u
: "${ATTACKS:=reg_mr_wrap unimport mappings connections}"
. "$(dirname "$0")/lib.sh"
it_init tenant_attacks

it_need_tools util-linux runuser
ATTACKER=uroce-x$$
BYSTANDER=uroce-y$$
it_user "$ATTACKER" -N || exit 1
it_user "$BYSTANDER" -N || exit 1
# The programs run from copies in the test's folder: the checkout may sit in a folder
# other users cannot enter.
chmod 0755 "$IT_DIR"
ATTACK=$IT_DIR/tenant_attack
CLI=$IT_DIR/uroce
install -m 0755 "$TENANT_ATTACK" "$ATTACK" || exit 1
install -m 0755 "$UROCE_CLI" "$CLI" || exit 1

it_daemon T "" "--vdev=net_null0,no-rx=1" 10.77.43.1 1500 \
	--set control.socket_mode=0666 || exit 1
S=$(it_sock T)

# served WHAT: the daemon is alive, a second user's `uroce stat` answers and root's RC
# ping-pong over the daemon's loopback passes.
port=19430
served() {
	it_check "$1: the daemon is alive" kill -0 "$IT_PID_T"
	it_check "$1: another user is answered" \
		timeout 20 runuser -u "$BYSTANDER" -- "$CLI" -S "$S" stat
	port=$((port + 10))
	it_xfer_pair "$1-pingpong" 60 "$S" "$S" "$port" rc_pingpong -n 200
}

# attack NAME [ULIMIT_L_KIB]: tenant_attack NAME as the attacker (under that ulimit -l);
# its verdict is the check.
attack() {
	local name=$1 lim=${2:-} out rc
	out=$(
		[ -z "$lim" ] || ulimit -l "$lim" # as root: the hard limit too
		timeout 120 runuser -u "$ATTACKER" -- "$ATTACK" "$S" "$name" 2>&1
	)
	rc=$?
	it_log "$name: $out"
	it_check "$name refused as the kernel would" test "$rc" -eq 0
	served "$name"
}


# connections: the attacker holds what it may; others still connect. Then it is killed
# (runuser's child, so by its uid): its connections go, and nothing of it is left.
no_clients() { # but the asking CLI's own
	[ "$("$UROCE_CLI" -S "$S" stat | awk '$1 == "clients" { print $2 }')" = 1 ]
}
attack_connections() {
	local holder
	runuser -u "$ATTACKER" -- "$ATTACK" "$S" connections 300 >"$IT_DIR/conn.out" 2>&1 &
	holder=$!
	it_wait_line "$IT_DIR/conn.out" '^holding' "$holder" 60
	it_log "connections: $(cat "$IT_DIR/conn.out")"
	it_check "HELLO past limits.clients refused with EAGAIN" \
		grep -q 'limits.clients: Resource temporarily unavailable' "$IT_DIR/conn.out"
	it_check "the attacker holds limits.clients (64) connections" \
		grep -q '^holding 64$' "$IT_DIR/conn.out"
	served connections
	pkill -KILL -u "$ATTACKER"
	wait "$holder" 2>/dev/null
	it_check "the killed attacker's connections are gone" \
		it_wait_until "$IT_PID_T" 10 no_clients
}

wanted() { [[ " $ATTACKS " == *" $1 "* ]]; }
wanted reg_mr_wrap && attack reg_mr_wrap
wanted unimport && attack unimport 2048
wanted mappings && attack mappings
wanted connections && attack_connections

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "tenant_attacks: all checks passed"
exit 0
