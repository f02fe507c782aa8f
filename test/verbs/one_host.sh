#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One host, one uroced: both ends of the unmodified Debian tools (ibverbs-utils, perftest)
# over the drop-in libibverbs.so.1 through the SAME daemon (same UROCE_SOCKET), their TCP
# exchange over 127.0.0.1. The daemon's port is net_null (no wire): every frame a QP sends
# to the daemon's own address takes uroced's loopback path. Needs root (exit 77
# otherwise).
#   test/verbs/one_host.sh            (meson test -C BUILD --suite verbs verbs_one_host)
# Env: VERBS_LIB_DIR (the folder of the built libibverbs.so.1), UROCED, UROCE_XFER,
# UROCE_CLI; TOOLS_ONLY="regex" runs only the cases whose label matches.
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${TOOLS_ONLY:=}"

it_init verbs_one_host
it_need_tools "ibverbs-utils, perftest" ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong \
	ibv_srq_pingpong ib_send_lat ib_write_bw ib_read_lat ib_atomic_lat
it_need_built "$VERBS_LIB_DIR/libibverbs.so.1"

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.81.0.1 1500 || exit 1
SOCK=$(it_sock L)
# A unique TCP port per run and per case (several runs may share the host; tools.sh
# uses 20000-52000 in steps of 16 from its pid, this one is offset by 8).
PORT=$((20008 + (IT_ID % 2000) * 16))

on() { LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$SOCK "$@"; }
want() { [ -z "$TOOLS_ONLY" ] || [[ $1 =~ $TOOLS_ONLY ]]; }

# pair LABEL TIMEOUT CMD ARGS...: CMD ARGS -p PORT as server, then as client to
# 127.0.0.1, both on the one daemon; both must exit 0. The client's output is printed
# (FILTER: a grep pattern of the lines kept, all if empty).
FILTER=
pair() { it_tool_pair "on" "on" "$@"; }

# The GID of the daemon's IPv4 address (RoCE v2, ::ffff:10.81.0.1).
GIDX=$(on ibv_devinfo -v 2>/dev/null |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:10\.81\.0\.1.*/\1/p' | head -1)
if [ -z "$GIDX" ]; then
	it_log "FAIL ibv_devinfo -v: no IPv4 GID"
	on ibv_devinfo -v 2>&1 | sed 's/^/    /'
	exit 1
fi
it_log "one daemon ($SOCK), IPv4 GID index $GIDX"

# ---- ibverbs-utils ping-pongs ----
FILTER='bytes in|iters in'
pair "ibv_rc_pingpong" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -s 4096 -n 500
pair "ibv_rc_pingpong -e" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -e -n 500
pair "ibv_ud_pingpong" 60 ibv_ud_pingpong -d uroce0 -g "$GIDX" -s 1024 -n 500
pair "ibv_srq_pingpong" 60 ibv_srq_pingpong -d uroce0 -g "$GIDX" -s 1024 -n 500

# ---- perftest (no -R: the exchange is perftest's own TCP) ----
FILTER='^ *[0-9]+ +[0-9]+ '
PT=(-d uroce0 -x "$GIDX" -F)
pair "ib_send_lat" 120 ib_send_lat "${PT[@]}" -n 1000 -s 64
pair "ib_write_bw" 120 ib_write_bw "${PT[@]}" -n 1000 -s 65536
pair "ib_read_lat" 120 ib_read_lat "${PT[@]}" -n 1000 -s 64
pair "ib_atomic_lat" 120 ib_atomic_lat "${PT[@]}" -n 1000
pair "ib_atomic_lat CMP_AND_SWAP" 120 ib_atomic_lat "${PT[@]}" -n 1000 -A CMP_AND_SWAP

# ---- ibv_asyncwatch ----
# spawn_watch OUT: ibv_asyncwatch in the background, pid in WPID. Job control on, so it
# keeps the default SIGINT action (a non-interactive shell's background jobs ignore it).
spawn_watch() {
	set -m
	env LD_LIBRARY_PATH="$VERBS_LIB_DIR" UROCE_SOCKET="$SOCK" ibv_asyncwatch -d uroce0 \
		>"$1" 2>&1 &
	WPID=$!
	set +m
}
# watch_ready OUT: until the ibv_asyncwatch just spawned has opened the device (it prints
# its async FD first): at most the 60 s a start can take on a loaded machine. A fixed
# second raced a slow start (then it was not blocked yet, or had no device to lose).
watch_ready() { it_wait_line "$1" 'async event FD' "$WPID" 60; }

# wait_gone PID SECONDS: 0 once PID has exited (reaped: its status in WRC).
wait_gone() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			WRC=$?
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# 1. It opens the device, blocks on the async fd (asleep in epoll, no CPU) and dies of
# SIGINT at once.
if want "ibv_asyncwatch SIGINT"; then
	out=$IT_DIR/asyncwatch1.out
	spawn_watch "$out"
	watch_ready "$out"
	# Printed, then it blocks: give it 5 s to get there.
	for _ in $(seq 50); do
		state=$(awk '{ print $3 }' "/proc/$WPID/stat" 2>/dev/null)
		[ "$state" = S ] && break
		sleep 0.1
	done
	wchan=$(cat "/proc/$WPID/wchan" 2>/dev/null)
	kill -INT "$WPID" 2>/dev/null
	if [ "$state" = S ] && wait_gone "$WPID" 5 && [ "$WRC" -eq 130 ]; then
		it_log "PASS ibv_asyncwatch SIGINT: blocked (state $state, wchan $wchan)," \
			"exit $WRC on SIGINT"
		sed 's/^/    /' "$out"
	else
		it_log "FAIL ibv_asyncwatch SIGINT: state '$state', wchan '$wchan', exit ${WRC:-none}"
		kill -KILL "$WPID" 2>/dev/null
		sed 's/^/    /' "$out"
		IT_FAILS=$((IT_FAILS + 1))
	fi
fi

# 2. The daemon dies (SIGKILL, nothing said on the socket): the async fd becomes readable
# and ibv_get_async_event returns IBV_EVENT_DEVICE_FATAL,
# which ibv_asyncwatch prints; its next call fails (EIO) and it exits. Last: the daemon
# is gone after it.
if want "ibv_asyncwatch DEVICE_FATAL"; then
	out=$IT_DIR/asyncwatch2.out
	spawn_watch "$out"
	watch_ready "$out"
	kill -KILL "$IT_PID_L"
	wait "$IT_PID_L" 2>/dev/null
	if wait_gone "$WPID" 10 && grep -q 'IBV_EVENT_DEVICE_FATAL' "$out"; then
		it_log "PASS ibv_asyncwatch DEVICE_FATAL: daemon killed, asyncwatch exit $WRC"
		sed 's/^/    /' "$out"
	else
		it_log "FAIL ibv_asyncwatch DEVICE_FATAL: exit ${WRC:-none (still running)}"
		kill -KILL "$WPID" 2>/dev/null
		sed 's/^/    /' "$out"
		IT_FAILS=$((IT_FAILS + 1))
	fi
fi

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS case(s) failed"
	exit 1
fi
it_log "all passed"
