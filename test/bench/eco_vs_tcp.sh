#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The middleware that stands in for TCP, over uroce, beside the same program over kernel
# TCP: same kind of link, same run, two network namespaces joined by a veth pair for each.
#   - kernel: the veth ends hold 10.83.0.1/2, no daemon;
#   - uroce: a uroced on each end of the other pair (net_af_packet), its address on a
#     kernel interface (host.kernel_iface), 10.84.0.1/2.
# The programs:
#   - qperf: -cm1 rc_lat, rc_bw, rc_rdma_write_bw over uroce; tcp_lat, tcp_bw over the
#     kernel (latency one-way, half the round trip; bandwidth the receiver's);
#   - sockperf ping-pong --tcp: under librspreload.so (rsockets) over uroce, plain over the
#     kernel (its median one-way latency).
# The median and range of RUNS runs, kernel and uroce runs interleaved. Root; needs qperf
# (the sockperf row is left out without sockperf or librspreload.so).
#   test/bench/eco_vs_tcp.sh [--quick]    Env: VERBS_LIB_DIR, RDMACM_LIB_DIR; RUNS; SECONDS_EACH
set -uo pipefail
. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${RDMACM_LIB_DIR:=$IT_ROOT/build/lib/rdmacm}"
RUNS=${RUNS:-5}
SECONDS_EACH=${SECONDS_EACH:-3}
if [ "${1:-}" = --quick ]; then
	RUNS=1
	SECONDS_EACH=1
fi
command -v qperf >/dev/null || { echo "eco_vs_tcp: no qperf (apt-get install qperf); skipped"; exit 77; }
PRELOAD=$(ls /usr/lib/*/rsocket/librspreload.so 2>/dev/null | head -n 1)
socks=0
command -v sockperf >/dev/null && [ -n "$PRELOAD" ] && socks=1
it_init eco_vs_tcp

# The kernel's pair: plain veth with addresses, no daemon.
KNS_A=uk${IT_ID}a KNS_B=uk${IT_ID}b
ip netns add "$KNS_A" && IT_NETNS+=("$KNS_A")
ip netns add "$KNS_B" && IT_NETNS+=("$KNS_B")
ip link add "$KNS_A" netns "$KNS_A" type veth peer name "$KNS_B" netns "$KNS_B" || exit 1
ip -n "$KNS_A" addr add 10.83.0.1/24 dev "$KNS_A"
ip -n "$KNS_B" addr add 10.83.0.2/24 dev "$KNS_B"
for ns in "$KNS_A" "$KNS_B"; do
	ip -n "$ns" link set "$ns" up
	ip -n "$ns" link set lo up
done

# uroce's pair.
it_kernel_iface_pair 10.84.0 ,framecnt=4096 || exit 1
libs=$VERBS_LIB_DIR:$RDMACM_LIB_DIR

ip netns exec "$KNS_B" qperf >/dev/null 2>&1 &
kpid=$!
ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" LD_LIBRARY_PATH="$libs" \
	qperf >/dev/null 2>&1 &
upid=$!
IT_PIDS+=("$kpid" "$upid")
# qperf's servers take their clients on a kernel TCP socket (port 19765), in both pairs.
it_wait_listen 19765 "$kpid" 10 "$KNS_B" || { echo "eco_vs_tcp: kernel qperf server"; exit 1; }
it_wait_listen 19765 "$upid" 10 "$IT_NS_B" || { echo "eco_vs_tcp: uroce qperf server"; exit 1; }

# fig: qperf's figure in what it prints, in us or MB/s.
fig() {
	awk '$1 == "latency" || $1 == "bw" {
		u = $4; f = $3
		if (u == "ns") f /= 1000; else if (u == "ms") f *= 1000; else if (u == "sec") f *= 1e6
		if (u == "KB/sec") f /= 1000; else if (u == "GB/sec") f *= 1000
		printf "%.2f\n", f; exit }'
}
# kns ARRAY NS, uns ARRAY A|B: fill ARRAY with the words that run a program in a kernel
# namespace, or next to daemon A or B with $pre preloaded (librspreload.so for a plain
# socket program). Words, not a function, so `"${srv[@]}" prog &` makes $! the program's
# own timeout. -k: a server blocked where SIGTERM does not end it (sockperf in an rsockets
# accept, under librspreload) is killed 3 s after the TERM.
kns() { local -n words=$1; words=(ip netns exec "$2" timeout -k 3 60); }
uns() {
	local -n words=$1
	local ns
	[ "$2" = A ] && ns=$IT_NS_A || ns=$IT_NS_B
	words=(ip netns exec "$ns" env UROCE_SOCKET="$(it_sock "$2")" LD_LIBRARY_PATH="$libs"
		LD_PRELOAD="${pre:-}" timeout -k 3 60)
}
# kq TEST...: qperf over kernel TCP; uq TEST...: over uroce, from namespace A.
kq() {
	local on
	kns on "$KNS_A"
	"${on[@]}" qperf -t "$SECONDS_EACH" 10.83.0.2 "$@" 2>&1 | fig
}
uq() {
	local on
	uns on A
	"${on[@]}" qperf -t "$SECONDS_EACH" 10.84.0.2 -cm1 "$@" 2>&1 | fig
}

PORT=$((20000 + $$ % 10000))
# settle kernel|uroce PID LISTENING0: until the server listens, for at most 10 s. The
# kernel's socket shows in ss; an rsocket listens through rdma_cm in daemon B, which counts
# its listening ids (cm.listening, above LISTENING0 from before the server started). A
# fixed second's wait lost that race under load, and the run printed no figure.
settle() {
	if [ "$1" = kernel ]; then
		it_wait_listen "$PORT" "$2" 10 "$KNS_B"
	else
		it_wait_cm_listening "$(it_sock B)" "$3" "$2" 10
	fi
}
# sp kernel|uroce: sockperf's median one-way latency (us).
sp() {
	local srv cli pid pre=$PRELOAD listening0
	PORT=$((PORT + 1))
	if [ "$1" = kernel ]; then
		kns srv "$KNS_B"
		kns cli "$KNS_A"
		addr=10.83.0.2
	else
		uns srv B
		uns cli A
		addr=10.84.0.2
	fi
	listening0=$(it_stat "$(it_sock B)" cm.listening)
	"${srv[@]}" sockperf server --tcp -i "$addr" -p "$PORT" >/dev/null 2>&1 &
	pid=$!
	settle "$1" "$pid" "$listening0"
	"${cli[@]}" sockperf ping-pong --tcp -i "$addr" -p "$PORT" -t "$SECONDS_EACH" 2>&1 |
		awk '/percentile 50.000/ { printf "%.2f\n", $NF; exit }'
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

declare -A fig
for ((r = 1; r <= RUNS; r++)); do
	fig[tcp_lat]+="$(kq tcp_lat) "
	fig[rc_lat]+="$(uq rc_lat) "
	fig[tcp_bw]+="$(kq tcp_bw) "
	fig[rc_bw]+="$(uq rc_bw) "
	fig[rc_rdma_write_bw]+="$(uq rc_rdma_write_bw) "
	if [ "$socks" = 1 ]; then
		fig[sp_kernel]+="$(sp kernel) "
		fig[sp_uroce]+="$(sp uroce) "
	fi
done
ip netns exec "$KNS_A" timeout 10 qperf 10.83.0.2 quit >/dev/null 2>&1
ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" \
	timeout 10 qperf 10.84.0.2 quit >/dev/null 2>&1

# stats FIGURES...: "median (min-max)"; "-" when a run printed nothing.
stats() {
	printf '%s\n' "$@" | sort -g | awk '
		{ v[NR] = $1 } END {
			if (NR == 0) { print "-"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f (%.1f-%.1f)", m, v[1], v[NR] }'
}
echo "qperf and sockperf, $RUNS runs of $SECONDS_EACH s each, veth between two namespaces"
echo "(median, range):"
printf '  %-34s %-26s %s\n' test uroce "kernel TCP, same run"
# shellcheck disable=SC2086
{
	printf '  %-34s %-26s %s\n' "latency, one-way (us): rc_lat" "$(stats ${fig[rc_lat]})" \
		"tcp_lat $(stats ${fig[tcp_lat]})"
	printf '  %-34s %-26s %s\n' "bandwidth (MB/s): rc_bw" "$(stats ${fig[rc_bw]})" \
		"tcp_bw $(stats ${fig[tcp_bw]})"
	printf '  %-34s %-26s %s\n' "bandwidth (MB/s): rc_rdma_write_bw" \
		"$(stats ${fig[rc_rdma_write_bw]})" "tcp_bw $(stats ${fig[tcp_bw]})"
	if [ "$socks" = 1 ]; then
		printf '  %-34s %-26s %s\n' "sockperf --tcp one-way median (us)" \
			"$(stats ${fig[sp_uroce]}) rsockets" "$(stats ${fig[sp_kernel]})"
	fi
}
keys="rc_lat rc_bw rc_rdma_write_bw tcp_lat tcp_bw"
[ "$socks" = 1 ] && keys+=" sp_kernel sp_uroce"
# shellcheck disable=SC2086
for k in $keys; do
	set -- ${fig[$k]}
	[ $# -eq "$RUNS" ] || { echo "eco_vs_tcp: $k printed $# figures of $RUNS"; exit 1; }
done
exit 0
