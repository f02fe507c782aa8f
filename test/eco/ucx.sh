#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# UCX (Debian's ucx-utils, unmodified) over two uroced joined by a veth pair, with only
# LD_LIBRARY_PATH and UROCE_SOCKET set:
#   - ucx_info -d lists uroce0 as a memory domain with the rc_verbs and ud_verbs
#     transports (UCX wants /dev/infiniband/<dev_name>, which each daemon keeps);
#   - ucx_perftest, UCT level: am_lat over rc_verbs and over ud_verbs, put_bw and get
#     (zero-copy) over rc_verbs;
#   - ucx_perftest, UCP level, with UCX's own transport choice among what is not
#     same-host memory (UCX_TLS=^shm,cma,tcp: both processes run on this machine, and
#     UCX would otherwise take shared memory): tag_lat, tag_bw, ucp_put_bw, ucp_get,
#     ucp_am_lat.
# Each run must print its "Final:" line with every iteration done, and the client's
# daemon must have sent and received at least that many RoCE packets for it: the
# figures came over uroce, not over another path.
#
#   test/eco/ucx.sh   (root; $UROCED, $UROCE_XFER, $UROCE_CLI, $UROCE_VERBS_LIBDIR)
# Exit: 0 passed, 1 failed, 77 skipped (not root, or ucx-utils not installed).
set -u
. "$(dirname "$0")/../integration/lib.sh"

for t in ucx_info ucx_perftest; do
	if ! command -v "$t" >/dev/null; then
		echo "eco_ucx: $t not found (apt-get install ucx-utils); skipped"
		exit 77
	fi
done
it_init eco_ucx
export LD_LIBRARY_PATH=$UROCE_VERBS_LIBDIR
# The out-of-band TCP exchange of ucx_perftest, on loopback: a port of this run's own.
PORT=$((20000 + $$ % 10000))
ITER=2000
fails=0

# af_packet rings of 8192 frames: UCX busy-polls from both processes, so each daemon
# shares the two CPUs with pollers and is descheduled for milliseconds at a time; the
# default 512 frames then overflow (port.rx_socket_drops) and each loss costs a timeout.
it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500),framecnt=8192" 10.79.0.1 1500 ||
	exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500),framecnt=8192" 10.79.0.2 1500 ||
	exit 1

info=$(UROCE_SOCKET=$(it_sock A) ucx_info -d 2>&1)
for want in "Memory domain: uroce0" "Transport: rc_verbs" "Transport: ud_verbs"; do
	if grep -q "$want" <<<"$info"; then
		it_log "ok: ucx_info -d shows $want"
	else
		it_log "FAILED: ucx_info -d does not show $want"
		fails=$((fails + 1))
	fi
done

# perftest NAME ENV... -- ARGS...: server on daemon B, client on daemon A.
perftest() {
	local name=$1 sent0 rcvd0 sent rcvd final n rc
	shift
	local -a envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	PORT=$((PORT + 1))
	sent0=$(it_stat "$(it_sock A)" sent_pkts)
	rcvd0=$(it_stat "$(it_sock A)" rcvd_pkts)
	env "${envs[@]}" UROCE_SOCKET="$(it_sock B)" timeout -k 5 120 \
		ucx_perftest -p "$PORT" "$@" >"$IT_DIR/$name.server" 2>&1 &
	local spid=$!
	it_wait_listen "$PORT" "$spid" 120
	env "${envs[@]}" UROCE_SOCKET="$(it_sock A)" timeout -k 5 120 \
		ucx_perftest 127.0.0.1 -p "$PORT" "$@" -n "$ITER" >"$IT_DIR/$name.client" 2>&1
	rc=$?
	wait "$spid"
	sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
	rcvd=$(($(it_stat "$(it_sock A)" rcvd_pkts) - rcvd0))
	final=$(grep -m1 '^Final:' "$IT_DIR/$name.client")
	n=$(awk '{print $2}' <<<"$final")
	if [ "$rc" -eq 0 ] && [ "${n:-0}" = "$ITER" ] && [ "$sent" -ge "$ITER" ] &&
		[ "$rcvd" -ge "$ITER" ]; then
		it_log "ok: $name: $ITER iterations, $sent RoCE packets sent and $rcvd received;" \
			"median latency $(awk '{print $3}' <<<"$final") us," \
			"bandwidth $(awk '{print $6}' <<<"$final") MB/s"
	else
		it_log "FAILED: $name: exit $rc, final line '${final}', packets $sent/$rcvd"
		grep -v '^ *[0-9]* *0x\|^ *[0-9]*  /' "$IT_DIR/$name.client" | tail -n 8
		fails=$((fails + 1))
	fi
}

UCT=(-d uroce0:1)
UCP=(UCX_NET_DEVICES=uroce0:1 "UCX_TLS=^shm,cma,tcp")
perftest uct_am_lat_rc -- "${UCT[@]}" -x rc_verbs -t am_lat
perftest uct_put_bw_rc -- "${UCT[@]}" -x rc_verbs -t put_bw -s 65536 -D zcopy
perftest uct_get_rc -- "${UCT[@]}" -x rc_verbs -t get -s 65536 -D zcopy
perftest uct_am_lat_ud -- "${UCT[@]}" -x ud_verbs -t am_lat
perftest ucp_tag_lat "${UCP[@]}" -- -t tag_lat
perftest ucp_tag_bw "${UCP[@]}" -- -t tag_bw -s 65536
perftest ucp_put_bw "${UCP[@]}" -- -t ucp_put_bw -s 65536
perftest ucp_get "${UCP[@]}" -- -t ucp_get -s 65536
perftest ucp_am_lat "${UCP[@]}" -- -t ucp_am_lat

if [ "$fails" -ne 0 ]; then
	it_log "eco_ucx: $fails case(s) failed"
	exit 1
fi
it_log "eco_ucx: all cases passed"
exit 0
