#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# uroce-rawbench between two processes over the ports the project runs on:
#   1. net_af_packet on a veth pair joining two network namespaces: ping-pong and blast
#   2. net_memif (server listening first, path socket under /tmp): ping-pong and blast
#   3. MTU 9000 on the veth pair: ping-pong of 8000-byte frames (the PMD refuses the MTU,
#      drivers/ethdev keeps it as a software MTU)
#   4. MTU 9000 over memif with 2 KiB mbufs: 8000-byte frames chained on TX and
#      linearized on RX, on both sides
# Needs root (namespaces, veth): exits 77 (skip) otherwise.
#
# usage: rawbench.sh /path/to/uroce-rawbench
# For figures (doc/ethdev.md) rather than a check: RAWBENCH_ROUNDS=20000 RAWBENCH_SECONDS=3
set -u
ROUNDS=${RAWBENCH_ROUNDS:-2000}
SECS=${RAWBENCH_SECONDS:-1}

BIN=${1:?usage: $0 /path/to/uroce-rawbench}
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth pairs)"
	exit 77
fi
for tool in ip timeout; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }

TAG=urb$$                  # unique per run; interface names stay under 15 characters
NSA=${TAG}a NSB=${TAG}b
VA=${TAG}va VB=${TAG}vb
TMP=$(mktemp -d /tmp/uroce-ethdev-test.XXXXXX)
SOCK=$TMP/memif.sock
SPID=                      # the server running now, if any
FAILS=0

cleanup() {
	if [ -n "$SPID" ]; then
		kill -TERM "$SPID" 2>/dev/null # timeout(1) passes it on, then kills after 2 s
		wait "$SPID" 2>/dev/null
	fi
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	ip link del "$VA" 2>/dev/null
	# A killed DPDK process leaves its hugepage files and runtime directory behind.
	rm -f /dev/hugepages/"${TAG}"*map_* 2>/dev/null
	rm -rf /var/run/dpdk/"${TAG}"* 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# One core each when there are two; --no-huge: no hugepages are reserved on these
# machines and none of these PMDs needs them.
NCPU=$(nproc)
CORE_S=0
CORE_C=$((1 % NCPU))
eal() { # eal PREFIX CORE VDEV
	echo --no-pci --no-huge -m 256 --no-telemetry --log-level=lib.eal:error \
		--file-prefix "$1" -l "$2" --vdev="$3"
}

ip netns add "$NSA" && ip netns add "$NSB" &&
	ip link add "$VA" type veth peer name "$VB" &&
	ip link set "$VA" netns "$NSA" && ip link set "$VB" netns "$NSB" &&
	ip -n "$NSA" link set "$VA" up && ip -n "$NSB" link set "$VB" up ||
	{ echo "FAIL: could not create the namespaces and the veth pair"; exit 1; }

fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}

# run NAME "SERVER_WRAP" SERVER_VDEV "CLIENT_WRAP" CLIENT_VDEV -- BENCH ARGS...
# Starts the server, waits until its port is up (a memif server then listens), runs the client.
run() {
	local name=$1 swrap=$2 svdev=$3 cwrap=$4 cvdev=$5
	shift 6
	local out=$TMP/$name i
	# The server lives through the client's whole run, the client's EAL start included:
	# on a machine running an MPI job beside this test, the server reached a 25 s limit
	# (killed, exit 137) after echoing every ping of a client that passed. Its limit is
	# the client's and 20 s more.
	# shellcheck disable=SC2086,SC2046
	timeout -k 2 45 $swrap "$BIN" $(eal "${TAG}s" $CORE_S "$svdev") -- --role server \
		--timeout 40 -v "$@" >"$out.server" 2>&1 &
	SPID=$!
	for i in $(seq 100); do
		grep -q "^server: port" "$out.server" 2>/dev/null && break
		kill -0 "$SPID" 2>/dev/null || break
		sleep 0.1
	done
	# shellcheck disable=SC2086,SC2046
	timeout -k 2 25 $cwrap "$BIN" $(eal "${TAG}c" $CORE_C "$cvdev") -- --role client \
		-v "$@" >"$out.client" 2>&1
	CRC=$?
	wait "$SPID"
	SRC=$?
	SPID=
	grep -hE "^(pingpong|blast|server: echoed|uroce: .*WARNING)" "$out.client" \
		"$out.server" | sed "s/^/  $name: /"
	if [ $CRC -ne 0 ] || [ $SRC -ne 0 ]; then
		fail "$name: client exit $CRC, server exit $SRC"
		sed "s/^/  $name client| /" "$out.client"
		sed "s/^/  $name server| /" "$out.server"
	fi
}

# field FILE LINE_PREFIX KEY: the value of KEY=... on the line starting with LINE_PREFIX
field() {
	grep "^$2" "$1" | head -1 | tr ' ' '\n' | sed -n "s/^$3=//p"
}

check_pingpong() { # NAME COUNT [exact]: all rounds, none lost; exact: no ghost frames
	local c=$TMP/$1.client rounds lost pings echoed
	rounds=$(field "$c" "pingpong: size" rounds)
	lost=$(field "$c" "pingpong: size" lost)
	[ "$rounds" = "$2" ] && [ "$lost" = 0 ] ||
		fail "$1: ping-pong rounds=${rounds:-none} lost=${lost:-?}, want $2 and 0"
	if [ "${3:-}" = exact ]; then
		pings=$(field "$c" "pingpong: pings" pings)
		echoed=$(field "$c" "pingpong: pings" server_echoed)
		[ -n "$pings" ] && [ "$pings" = "$echoed" ] ||
			fail "$1: client sent ${pings:-?} pings, server echoed ${echoed:-?}"
	fi
}

check_blast() { # NAME: the server counted frames and the client got its count
	local frames
	frames=$(field "$TMP/$1.server" "blast-rx:" frames)
	[ -n "$frames" ] && [ "$frames" -gt 0 ] ||
		fail "$1: the blast server received ${frames:-no} frames"
	grep -q "^blast-result:" "$TMP/$1.client" || fail "$1: no blast result at the client"
}

check_stat() { # NAME SIDE STAT: a non-zero drivers/ethdev counter
	grep -q "^$2: stat $3 [1-9]" "$TMP/$1.$2" || fail "$1: $2 counter $3 is zero"
}

START=$SECONDS
A="ip netns exec $NSA"
B="ip netns exec $NSB"

echo "# net_af_packet over veth (netns $NSA <-> $NSB)"
run afp-pingpong "$A" "net_af_packet0,iface=$VA" "$B" "net_af_packet0,iface=$VB" -- \
	--mode pingpong --size 64 --count "$ROUNDS"
check_pingpong afp-pingpong "$ROUNDS"
run afp-blast "$A" "net_af_packet0,iface=$VA" "$B" "net_af_packet0,iface=$VB" -- \
	--mode blast --size 64 --duration "$SECS"
check_blast afp-blast

echo "# net_memif (socket $SOCK)"
MS="net_memif0,role=server,socket=$SOCK,socket-abstract=no"
MC="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
run memif-pingpong "" "$MS" "" "$MC" -- --mode pingpong --size 64 --count "$ROUNDS"
check_pingpong memif-pingpong "$ROUNDS" exact
run memif-blast "" "$MS" "" "$MC" -- --mode blast --size 64 --duration "$SECS"
check_blast memif-blast

echo "# MTU 9000: veth MTU 9000, af_packet frames of 9216 bytes"
ip -n "$NSA" link set "$VA" mtu 9000 && ip -n "$NSB" link set "$VB" mtu 9000 ||
	fail "veth MTU 9000"
AFJ="blocksz=36864,framesz=9216,framecnt=512"
run afp-jumbo "$A" "net_af_packet0,iface=$VA,$AFJ" "$B" "net_af_packet0,iface=$VB,$AFJ" -- \
	--mode pingpong --size 8000 --count "$ROUNDS" --mtu 9000
check_pingpong afp-jumbo "$ROUNDS"
grep -q "mtu 9000 (software)" "$TMP/afp-jumbo.client" ||
	fail "afp-jumbo: expected a software MTU of 9000 on net_af_packet"

echo "# MTU 9000 over memif, 2 KiB mbufs: chained TX, linearized RX"
run memif-jumbo "" "$MS,bsize=9216" "" "$MC,bsize=9216" -- \
	--mode pingpong --size 8000 --count "$ROUNDS" --mtu 9000 --mbuf-size 2048
check_pingpong memif-jumbo "$ROUNDS" exact
for side in client server; do
	check_stat memif-jumbo $side tx_chained
	check_stat memif-jumbo $side rx_linearized
done

echo "# $((SECONDS - START)) s, $FAILS failure(s)"
[ $FAILS -eq 0 ]
