#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# make.sh: make the Linux rxe captures of this folder again (README.md), from two guests
# of the project's VM (test/vm) running Debian 12's unmodified tools over rdma_rxe.
#
#   test/data/rxe-captures/make.sh [--out DIR] [NAME...]   root; the image (test/vm/image.sh)
#   test/data/rxe-captures/make.sh --compare DIR [NAME...] DIR against this folder
#
# Boots guest a (198.18.0.1, rxetap0) and guest b (198.18.0.2, rxetap1) on one bridge in a
# namespace of its own; for each recipe below (all of them by default) it starts tcpdump on
# the bridge (dumpcap, which tshark brings, when the host has no tcpdump) for UDP port
# 4791 only, runs the server in a, waits until it listens, runs the client in b, waits for
# both, and writes DIR/NAME.pcap. DIR is a new folder under /tmp unless --out names one; the
# captures here are only replaced when --out names this folder. The guests and the
# namespace end with the script, however it ends (uvm's watchers).
#
# --compare DIR says for each capture whether DIR/NAME.pcap agrees with this folder's in
# what the tests check (compare.py: the wire invariants, and the packet sequences or, for
# what is random by nature, the kinds of packet). Exit: 0, 1 on a failure or a difference.
set -euo pipefail
unset LD_LIBRARY_PATH

# The recipes, one line a capture:
#   NAME | COMPARE | NETEM | SERVER, run in a (198.18.0.1) | CLIENT, run in b (198.18.0.2)
# COMPARE: what --compare requires to agree (compare.py): seq, the packets in order;
# seq-dreq, the same but for the CM's disconnection when both ends disconnect at once;
# kinds, for what is random by nature, the kinds of packet and the PSNs the requests
# cover. NETEM: "a:ARGS" or "b:ARGS", tc netem on that guest's eth0 for the run. The
# commands run under bash in the guest, with $GID the
# index of rxe0's RoCEv2 IPv4 GID (roce-gid); rxe0 is the guest's only RDMA device, path
# MTU 1024. perftest's -u 16 (a 268 ms ACK timeout) only keeps an emulated guest that the
# host holds up for a while from retransmitting; the ports of rping and ib_write_bw -R
# are the ones the references carry in their CM service IDs.
recipes=(
	'rc_send             | seq      | -         | ibv_rc_pingpong -g $GID -s 2048 -n 10             | ibv_rc_pingpong -g $GID -s 2048 -n 10 198.18.0.1'
	'rc_send_only        | seq      | -         | ibv_rc_pingpong -g $GID -s 64 -n 20               | ibv_rc_pingpong -g $GID -s 64 -n 20 198.18.0.1'
	'send_imm            | seq      | -         | verbs-op --op send_imm -g $GID -s 256 -n 5        | verbs-op --op send_imm -g $GID -s 256 -n 5 198.18.0.1'
	'rdma_write          | seq      | -         | ib_write_bw -x $GID -s 4096 -n 20 -u 16           | ib_write_bw -x $GID -s 4096 -n 20 -u 16 198.18.0.1'
	'rdma_write_small    | seq      | -         | ib_write_lat -x $GID -s 32 -n 20 -u 16            | ib_write_lat -x $GID -s 32 -n 20 -u 16 198.18.0.1'
	'rdma_write_imm      | seq      | -         | verbs-op --op write_imm -g $GID -s 2048 -n 5      | verbs-op --op write_imm -g $GID -s 2048 -n 5 198.18.0.1'
	'rdma_write_imm_only | seq      | -         | verbs-op --op write_imm -g $GID -s 256 -n 5       | verbs-op --op write_imm -g $GID -s 256 -n 5 198.18.0.1'
	'rdma_read           | seq      | -         | ib_read_bw -x $GID -s 4096 -n 20 -u 16            | ib_read_bw -x $GID -s 4096 -n 20 -u 16 198.18.0.1'
	'rdma_read_small     | seq      | -         | ib_read_lat -x $GID -s 64 -n 20 -u 16             | ib_read_lat -x $GID -s 64 -n 20 -u 16 198.18.0.1'
	'atomic_fadd         | seq      | -         | ib_atomic_bw -x $GID -A FETCH_AND_ADD -n 20 -u 16 | ib_atomic_bw -x $GID -A FETCH_AND_ADD -n 20 -u 16 198.18.0.1'
	'atomic_cswap        | seq      | -         | ib_atomic_bw -x $GID -A CMP_AND_SWAP -n 20 -u 16  | ib_atomic_bw -x $GID -A CMP_AND_SWAP -n 20 -u 16 198.18.0.1'
	'ud_send             | seq      | -         | ibv_ud_pingpong -g $GID -s 512 -n 10              | ibv_ud_pingpong -g $GID -s 512 -n 10 198.18.0.1'
	'uc_write            | seq      | -         | ib_write_bw -x $GID -c UC -s 2048 -n 10           | ib_write_bw -x $GID -c UC -s 2048 -n 10 198.18.0.1'
	'rdma_cm_rping       | seq      | -         | rping -s -a 198.18.0.1 -p 19514 -C 3 -S 64        | rping -c -a 198.18.0.1 -p 19514 -C 3 -S 64'
	'rdma_cm_write_bw    | seq-dreq | -         | ib_write_bw -R -x $GID -p 19515 -s 1024 -n 10     | ib_write_bw -R -x $GID -p 19515 -s 1024 -n 10 198.18.0.1'
	'udaddy_sidr         | seq      | -         | udaddy -C 3                                       | udaddy -s 198.18.0.1 -C 3'
	'loss_write_nak      | kinds    | b:loss 3% | ib_write_bw -x $GID -s 8192 -n 27 -u 16           | ib_write_bw -x $GID -s 8192 -n 27 -u 16 198.18.0.1'
	'loss_read_retry     | kinds    | a:loss 3% | ib_read_bw -x $GID -s 4096 -n 30 -u 16            | ib_read_bw -x $GID -s 4096 -n 30 -u 16 198.18.0.1'
	'rnr_nak             | kinds    | -         | ib_send_bw -x $GID -s 64 -n 30 -r 1 -u 16         | ib_send_bw -x $GID -s 64 -n 30 -r 1 -u 16 198.18.0.1'
)

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
uvm=$top/test/vm/uvm

die() {
	echo "make.sh: $*" >&2
	exit 1
}
trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	echo "${s%"${s##*[![:space:]]}"}"
}
# recipe NAME: sets name, mode, netem, server, client from NAME's line.
recipe() {
	local line f
	for line in "${recipes[@]}"; do
		IFS='|' read -r -a f <<<"$line"
		[ "$(trim "${f[0]}")" = "$1" ] || continue
		name=$1 mode=$(trim "${f[1]}") netem=$(trim "${f[2]}")
		server=$(trim "${f[3]}") client=$(trim "${f[4]}")
		return 0
	done
	die "no recipe $1 (the table at the top of $0)"
}
all_names() {
	local line
	for line in "${recipes[@]}"; do
		trim "${line%%|*}"
	done
}

out= compare=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=${2:?--out DIR}; shift 2 ;;
	--compare) compare=${2:?--compare DIR}; shift 2 ;;
	-h | --help) sed -n '3,20p' "$0"; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(all_names)

if [ -n "$compare" ]; then
	specs=()
	for n in "${names[@]}"; do
		recipe "$n"
		specs+=("$n:$mode")
	done
	exec python3 "$here/compare.py" "$here" "$compare" "${specs[@]}"
fi

[ "$(id -u)" -eq 0 ] || die "needs root (a network namespace, QEMU's taps)"
for n in "${names[@]}"; do recipe "$n"; done
if command -v tcpdump >/dev/null; then
	capture=(tcpdump -i rxebr0 -U)
	filter=(udp port 4791)
elif command -v dumpcap >/dev/null; then
	capture=(dumpcap -q -P -i rxebr0)
	filter=(-f 'udp port 4791')
else
	die "neither tcpdump nor dumpcap (apt-get install tcpdump)"
fi
out=${out:-$(mktemp -d /tmp/rxe-captures.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/rxe-captures-work.XXXXXX)

# Names of our own: another run, or a test, may have guests of its own.
ns=cap$$ a=capa$$ b=capb$$
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "${cap_pid:-}" ] && kill "$cap_pid" 2>/dev/null
	"$uvm" stop "$a" "$b" >/dev/null 2>&1
	"$uvm" net down "$ns" >/dev/null 2>&1
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "make.sh: booting guests $a (198.18.0.1) and $b (198.18.0.2) in netns $ns"
"$uvm" net up "$ns" --taps 2 --owner $$
"$uvm" boot "$a" --ns "$ns" --tap rxetap0 --ip 198.18.0.1/24 --owner $$ >"$work/boot-a" 2>&1 &
boot_a=$!
"$uvm" boot "$b" --ns "$ns" --tap rxetap1 --ip 198.18.0.2/24 --owner $$ >"$work/boot-b" 2>&1 &
boot_b=$!
wait $boot_a || { cat "$work/boot-a" >&2; die "guest a did not boot"; }
wait $boot_b || { cat "$work/boot-b" >&2; die "guest b did not boot"; }
cat "$work/boot-a" "$work/boot-b"

# In the guests: $GID, and /tmp to work in.
prelude='export GID=$(roce-gid) && cd /tmp &&'
# The server is up when it listens: on TCP (perftest, ibv_*_pingpong, verbs-op) or as an
# rdma_cm ID (rping, udaddy, perftest -R).
listening='for i in $(seq 300); do
	ss -Hltn | grep -q . && exit 0
	rdma resource show cm_id 2>/dev/null | grep -q LISTEN && exit 0
	sleep 0.1
done; exit 1'

packets() {
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import compare
print(len(compare.read_pcap(sys.argv[2])))' "$here" "$1" 2>/dev/null || echo none
}

# run NAME: one recipe into $out/NAME.pcap.
run() {
	local log=$work/$1.log guest= qdisc= rc=0 i
	recipe "$1"
	: >"$log"
	if [ "$netem" != - ]; then
		guest=${netem%%:*} qdisc=${netem#*:}
		[ "$guest" = a ] && guest=$a || guest=$b
		"$uvm" exec "$guest" -- tc qdisc replace dev eth0 root netem $qdisc >>"$log" 2>&1
	fi
	rm -f "$work/$1.pcap"
	ip netns exec "$ns" "${capture[@]}" -w "$work/$1.pcap" "${filter[@]}" 2>"$work/$1.capture" &
	cap_pid=$!
	for i in $(seq 100); do
		grep -qsE 'listening on|Capturing on' "$work/$1.capture" && break
		sleep 0.1
	done
	"$uvm" spawn "$a" server -- "$prelude $server" >/dev/null
	if ! "$uvm" exec "$a" -t 60 -- "$listening" >/dev/null; then
		echo "server did not listen within 30 s" >>"$log"
		rc=1
	elif ! "$uvm" exec "$b" -t 300 -- "$prelude $client" >>"$log" 2>&1; then
		echo "client failed" >>"$log"
		rc=1
	fi
	if ! "$uvm" wait "$a" server -t 60 >>"$log" 2>&1; then
		echo "server failed or did not end" >>"$log"
		"$uvm" kill "$a" server >/dev/null 2>&1 || true
		rc=1
	fi
	[ -n "$guest" ] && "$uvm" exec "$guest" -- tc qdisc del dev eth0 root >>"$log" 2>&1
	# The last ACKs and the CM's DREP come after the client has returned.
	sleep 1
	kill -INT "$cap_pid" 2>/dev/null || true
	wait "$cap_pid" || true
	cap_pid=
	if [ "$rc" -ne 0 ] || [ ! -s "$work/$1.pcap" ]; then
		echo "make.sh: $1 failed; the end of its output:" >&2
		cat "$log" "$work/$1.capture" | tail -n 12 | sed 's/^/    /' >&2
		return 1
	fi
	mv "$work/$1.pcap" "$out/$1.pcap"
	printf 'make.sh: %-20s %4s packets (%s here)\n' "$1" "$(packets "$out/$1.pcap")" \
		"$(packets "$here/$1.pcap")"
}

# An emulated guest that the host holds up can fail a tool for its timing (perftest's
# "Correlation coefficient r^2 < 0.9: Can't produce a report" after the exchange): a
# recipe is run up to three times.
fails=0
for n in "${names[@]}"; do
	for attempt in 1 2 3; do
		run "$n" && break
		[ $attempt -lt 3 ] && echo "make.sh: $n: trying again" >&2
		[ $attempt -eq 3 ] && fails=$((fails + 1))
	done
done
echo "make.sh: ${#names[@]} recipe(s), $fails failed; captures in $out"
echo "make.sh: compare them with: $0 --compare $out"
[ "$fails" -eq 0 ]
