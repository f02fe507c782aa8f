#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The unmodified Debian tools (ibverbs-utils, perftest) over the drop-in libibverbs.so.1
# between two uroced (two network namespaces joined by a veth, test/integration/lib.sh):
# nothing but LD_LIBRARY_PATH points them at lib/verbs, and UROCE_SOCKET at the daemon
# of their side. Servers on host A, clients on host B; their TCP exchange goes over
# 127.0.0.1, the RDMA traffic over the veth as RoCEv2. Needs root (exit 77 otherwise).
#   test/verbs/tools.sh            (meson test -C BUILD --suite verbs)
# Env: VERBS_LIB_DIR (the folder of the built libibverbs.so.1), UROCED, UROCE_XFER,
# UROCE_CLI; TOOLS_ONLY="regex" runs only the cases whose label matches.
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${TOOLS_ONLY:=}"

it_init verbs_tools
it_need_tools "ibverbs-utils, perftest" ibv_devices ibv_devinfo ibv_rc_pingpong \
	ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ib_send_lat
it_need_built "$VERBS_LIB_DIR/libibverbs.so.1"

it_veth_pair 1500 || exit 1
# A deep af_packet ring (4096 frames, 8 MiB; the PMD's default is 512): on 2 shared cores
# a receiving daemon can be off the CPU while its peer sends several hundred frames, and
# UD (ib_send_bw -c UD: 1000 x 1 KiB) and UC lose what overflows the kernel's ring (1 run
# in ~4 failed with 327 of 1000 frames lost, 0 in 14 with this ring).
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A"),framecnt=4096" 10.78.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B"),framecnt=4096" 10.78.0.2 1500 || exit 1
SOCK_A=$(it_sock A)
SOCK_B=$(it_sock B)
# A unique TCP port per run and per case (several runs may share the host).
PORT=$((20000 + (IT_ID % 2000) * 16))
# The GID of the port's IPv4 address (RoCE v2, ::ffff:10.78.0.x): its index, read below.
GIDX=1

on() { # on A|B CMD...: a tool of that host's side
	local side=$1
	shift
	local sock=$SOCK_A
	[ "$side" = B ] && sock=$SOCK_B
	LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$sock "$@"
}

want() { [ -z "$TOOLS_ONLY" ] || [[ $1 =~ $TOOLS_ONLY ]]; }

# one LABEL TIMEOUT CMD...: a one-side tool must exit 0; its output is printed.
one() {
	local label=$1 tmo=$2
	shift 2
	want "$label" || return 0
	local out=$IT_DIR/one.out
	if timeout -k 5 "$tmo" "$@" >"$out" 2>&1; then
		it_log "PASS $label"
		sed 's/^/    /' "$out"
	else
		it_log "FAIL $label (exit $?)"
		sed 's/^/    /' "$out"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}

# pair LABEL TIMEOUT CMD ARGS...: CMD ARGS -p PORT on A (server), then on B with
# 127.0.0.1 (client); both must exit 0. The client's output is printed (FILTER: a grep
# pattern of the lines kept, all if empty).
FILTER=
pair() { it_tool_pair "on A" "on B" "$@"; }

# ---- discovery and queries ----
one ibv_devices 20 env LD_LIBRARY_PATH="$VERBS_LIB_DIR" UROCE_SOCKET="$SOCK_A" ibv_devices
one "ibv_devices (both daemons)" 20 env LD_LIBRARY_PATH="$VERBS_LIB_DIR" \
	UROCE_SOCKET="$SOCK_A:$SOCK_B" ibv_devices
one "ibv_devinfo -v" 20 env LD_LIBRARY_PATH="$VERBS_LIB_DIR" UROCE_SOCKET="$SOCK_A" \
	ibv_devinfo -v
GIDX=$(on B ibv_devinfo -v 2>/dev/null |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:10\.78\.0\.2.*/\1/p' | head -1)
GIDX=${GIDX:-1}
it_log "IPv4 GID index: $GIDX"
one "no daemon: empty list" 20 env LD_LIBRARY_PATH="$VERBS_LIB_DIR" \
	UROCE_SOCKET="$IT_DIR/none.sock" ibv_devices

# ---- ibverbs-utils ping-pongs ----
FILTER='bytes in|iters in'
for size in 1 4096 65536; do
	pair "ibv_rc_pingpong -s $size" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -s "$size" -n 200
done
pair "ibv_rc_pingpong -e" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -e -n 500
pair "ibv_rc_pingpong -m 1024" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -m 1024 -s 8192 -n 200
pair "ibv_rc_pingpong -N (ibv_wr_*)" 60 ibv_rc_pingpong -d uroce0 -g "$GIDX" -N -n 200
pair "ibv_uc_pingpong" 60 ibv_uc_pingpong -d uroce0 -g "$GIDX" -s 1024 -n 200
pair "ibv_ud_pingpong" 60 ibv_ud_pingpong -d uroce0 -g "$GIDX" -s 1024 -n 200
pair "ibv_srq_pingpong" 60 ibv_srq_pingpong -d uroce0 -g "$GIDX" -s 1024 -n 200

# ---- perftest (no -R: the exchange is perftest's own TCP) ----
FILTER='^ *[0-9]+ +[0-9]+ '
PT=(-d uroce0 -x "$GIDX" -F)
pair "ib_send_lat" 120 ib_send_lat "${PT[@]}" -n 1000 -s 64
pair "ib_send_lat UD" 120 ib_send_lat "${PT[@]}" -n 1000 -s 64 -c UD
pair "ib_send_bw" 120 ib_send_bw "${PT[@]}" -n 1000 -s 4096
# UC does not retransmit: a message the receiving daemon drops (af_packet overrun on a
# shared 2-core host) leaves the server waiting, so a shallow send queue keeps up.
pair "ib_send_bw UC" 120 ib_send_bw "${PT[@]}" -n 500 -s 4096 -c UC -t 8
pair "ib_send_bw UD" 120 ib_send_bw "${PT[@]}" -n 1000 -s 1024 -c UD
pair "ib_write_lat" 120 ib_write_lat "${PT[@]}" -n 1000 -s 64
pair "ib_write_bw" 120 ib_write_bw "${PT[@]}" -n 1000 -s 65536
pair "ib_write_bw UC" 120 ib_write_bw "${PT[@]}" -n 1000 -s 4096 -c UC
pair "ib_read_lat" 120 ib_read_lat "${PT[@]}" -n 1000 -s 64
pair "ib_read_bw" 120 ib_read_bw "${PT[@]}" -n 1000 -s 65536
pair "ib_atomic_lat" 120 ib_atomic_lat "${PT[@]}" -n 1000
pair "ib_atomic_bw" 120 ib_atomic_bw "${PT[@]}" -n 1000
pair "ib_atomic_bw CMP_AND_SWAP" 120 ib_atomic_bw "${PT[@]}" -n 1000 -A CMP_AND_SWAP

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS case(s) failed"
	exit 1
fi
it_log "all passed"
