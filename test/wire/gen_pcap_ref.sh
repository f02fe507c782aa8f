#!/usr/bin/env bash
# Writes the reference table the pcap tests compare lib/wire against: for every packet of
# every capture, the fields as Wireshark's InfiniBand dissector (tshark) decodes them.
#   gen_pcap_ref.sh PCAP_DIR > data/pcap_ref.tsv
# test/wire/meson.build re-runs it and diffs against the checked-in table when tshark is
# installed, so the table cannot drift from what tshark says.
set -euo pipefail
dir=${1:?usage: gen_pcap_ref.sh PCAP_DIR}
fields=(frame.number frame.len ip.src ip.dst udp.srcport udp.length
	infiniband.bth.opcode infiniband.bth.se infiniband.bth.m infiniband.bth.padcnt
	infiniband.bth.tver infiniband.bth.p_key infiniband.bth.destqp infiniband.bth.a
	infiniband.bth.psn infiniband.deth.q_key infiniband.deth.srcqp infiniband.reth.va
	infiniband.reth.r_key infiniband.reth.dmalen infiniband.atomiceth.swapdt
	infiniband.atomiceth.cmpdt infiniband.aeth.syndrome infiniband.aeth.msn
	infiniband.atomicacketh.origremdt infiniband.immdt infiniband.ieth
	infiniband.invariant.crc)
args=()
for f in "${fields[@]}"; do args+=(-e "$f"); done
# The header row names the columns without their protocol prefix.
printf 'file'
for f in "${fields[@]}"; do printf '\t%s' "${f#infiniband.}"; done
printf '\n'
for pcap in "$dir"/*.pcap; do
	# UDP 4791 decodes as RoCEv2 by default; rpcordma's heuristic would claim some SENDs.
	tshark -r "$pcap" --disable-protocol rpcordma -T fields -E separator=/t \
		-E occurrence=f "${args[@]}" 2>/dev/null | sed "s|^|$(basename "$pcap")\t|"
done
