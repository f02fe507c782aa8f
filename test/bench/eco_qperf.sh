#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# qperf over uroce beside qperf over kernel TCP, same kind of link, same run: two network
# namespaces joined by a veth pair for each.
#   - kernel: the veth ends hold 10.83.0.1/2; qperf tcp_lat and tcp_bw between them;
#   - uroce: a uroced on each end of the other pair (net_af_packet), its address on a
#     kernel interface (host.kernel_iface); qperf -cm1 rc_lat, rc_bw and
#     rc_rdma_write_bw between the daemons' addresses 10.84.0.1/2.
# Each figure is qperf's own (latency: one-way, half the round trip; bandwidth: the
# receiver's), the median and range of RUNS runs, kernel and uroce runs interleaved.
# Root; needs qperf.
#   test/bench/eco_qperf.sh [--quick]     Env: VERBS_LIB_DIR, RDMACM_LIB_DIR; RUNS; SECONDS_EACH
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
command -v qperf >/dev/null || { echo "eco_qperf: no qperf (apt-get install qperf); skipped"; exit 77; }
it_init eco_qperf

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
sleep 1

# fig: qperf's figure in what it prints, in us or MB/s.
fig() {
	awk '$1 == "latency" || $1 == "bw" {
		u = $4; f = $3
		if (u == "ns") f /= 1000; else if (u == "ms") f *= 1000; else if (u == "sec") f *= 1e6
		if (u == "KB/sec") f /= 1000; else if (u == "GB/sec") f *= 1000
		printf "%.2f\n", f; exit }'
}
# kq TEST...: qperf over kernel TCP; uq TEST...: over uroce, from namespace A.
kq() { ip netns exec "$KNS_A" timeout 60 qperf -t "$SECONDS_EACH" 10.83.0.2 "$@" 2>&1 | fig; }
uq() {
	ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" \
		timeout 60 qperf -t "$SECONDS_EACH" 10.84.0.2 -cm1 "$@" 2>&1 | fig
}

declare -A fig
for ((r = 1; r <= RUNS; r++)); do
	fig[tcp_lat]+="$(kq tcp_lat) "
	fig[rc_lat]+="$(uq rc_lat) "
	fig[tcp_bw]+="$(kq tcp_bw) "
	fig[rc_bw]+="$(uq rc_bw) "
	fig[rc_rdma_write_bw]+="$(uq rc_rdma_write_bw) "
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
echo "qperf, $RUNS runs of $SECONDS_EACH s each, veth between two namespaces (median, range):"
printf '  %-34s %-26s %s\n' test uroce "kernel TCP, same run"
# shellcheck disable=SC2086
{
	printf '  %-34s %-26s %s\n' "latency, one-way (us): rc_lat" "$(stats ${fig[rc_lat]})" \
		"tcp_lat $(stats ${fig[tcp_lat]})"
	printf '  %-34s %-26s %s\n' "bandwidth (MB/s): rc_bw" "$(stats ${fig[rc_bw]})" \
		"tcp_bw $(stats ${fig[tcp_bw]})"
	printf '  %-34s %-26s %s\n' "bandwidth (MB/s): rc_rdma_write_bw" \
		"$(stats ${fig[rc_rdma_write_bw]})" "tcp_bw $(stats ${fig[tcp_bw]})"
}
# shellcheck disable=SC2086
for k in rc_lat rc_bw rc_rdma_write_bw tcp_lat tcp_bw; do
	set -- ${fig[$k]}
	[ $# -eq "$RUNS" ] || { echo "eco_qperf: $k printed $# figures of $RUNS"; exit 1; }
done
exit 0
