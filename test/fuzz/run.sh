#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the fuzz targets for a bounded time (default 60 s in all, split evenly):
#   test/fuzz/run.sh [SECONDS]
#   - fuzz_wire_parse: lib/wire's parser and builder;
#   - fuzz_transport_rx: lib/transport's receive path (responder and completer);
#   - fuzz_ipstack_input: lib/ipstack (ARP, ND, echo, the neighbour cache);
#   - fuzz_daemon_ctrl: uroced's control requests and shared-ring WQEs;
#   - fuzz_cm_input: lib/cm on the MADs an attacker sends, between applications' calls;
#   - fuzz_flow: raw packet QPs' flow rules (applications' bytes) and frames (the wire's).
# Configures build-fuzz (clang, ASan+UBSan, fuzz=true) if needed, builds the targets and
# uroce-pcap, turns the pcaps into seed corpora, fuzzes one target after the other, and
# exits non-zero if any crashed (all run regardless).
# Env: UROCE_PCAP_DIR, the Linux rxe captures that seed the corpora (default
# test/data/rxe-captures, whose README says what they hold).
set -euo pipefail

cd "$(dirname "$0")/../.."

secs=${1:-60}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [SECONDS]  (a positive integer, default 60)" >&2
	exit 2
fi
# A sixth each, at least 1 s (libFuzzer takes -max_total_time=0 as "no limit").
transport_secs=$((secs / 6))
((transport_secs >= 1)) || transport_secs=1
ipstack_secs=$transport_secs
ctrl_secs=$transport_secs
cm_secs=$transport_secs
flow_secs=$transport_secs
wire_secs=$((secs - 5 * transport_secs))
((wire_secs >= 1)) || wire_secs=1

build=build-fuzz
pcap_dir=${UROCE_PCAP_DIR:-test/data/rxe-captures}
seeds=$build/fuzz-seeds
tseeds=$build/fuzz-transport-seeds
ipseeds=$build/fuzz-ipstack-seeds
ctrlseeds=$build/fuzz-ctrl-seeds
cmseeds=$build/fuzz-cm-seeds
flowseeds=$build/fuzz-flow-seeds

if [[ ! -f $build/build.ninja ]]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized
fi
# Only what this script runs, so that a half-edited target elsewhere does not stop it.
ninja -C "$build" test/fuzz/fuzz_wire_parse test/fuzz/fuzz_transport_rx \
	test/fuzz/fuzz_ipstack_input test/fuzz/fuzz_daemon_ctrl test/fuzz/fuzz_cm_input \
	test/fuzz/fuzz_flow \
	app/uroce-pcap/uroce-pcap

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1

# Seeds: every RoCEv2 frame of the captures that parses, verifies and rebuilds exactly.
shopt -s nullglob
pcaps=("$pcap_dir"/*.pcap)
shopt -u nullglob
if ((${#pcaps[@]} == 0)); then
	echo "$0: no pcaps in $pcap_dir (set UROCE_PCAP_DIR)" >&2
	exit 1
fi
rm -rf "$seeds" "$tseeds"
mkdir -p "$seeds" "$tseeds"
# Each captured frame, and (-t) its IPv6, 802.1Q, UDP-checksum and CNP variants written by
# lib/wire's builder: rxe's captures are all untagged IPv4, and libFuzzer does not find
# its way from there to a valid IPv6 frame on its own.
if ! "$build/app/uroce-pcap/uroce-pcap" -x "$seeds" -t "${pcaps[@]}" >"$build/fuzz-seeds.log"; then
	echo "$0: uroce-pcap failed on the captures (see $build/fuzz-seeds.log)" >&2
	exit 1
fi
nseeds=$(find "$seeds" -type f | wc -l)
if ((nseeds == 0)); then
	echo "$0: uroce-pcap wrote no seeds into $seeds" >&2
	exit 1
fi

# fuzz_transport_rx's input (see the top of fuzz_transport_rx.c): an 8-byte setup header,
# then records [length (2 bytes, big-endian), ctl] + frame. A seed is a window of 6
# consecutive frames of one capture (IPv4 windows overlap by 3; IPv6, for the UD GRH,
# do not), ctl 0x37: rkeys, VAs and PSNs rewritten to fit our QPs, 1 us between frames.
# The header's rotation (byte 5) varies with the window, so that a response finds a
# send WQE of its kind at the head of the send queue. Each IPv4 window is written a second
# time as XRC: RC opcodes become XRC's, and requests get an XRCETH after the BTH (ctl bit
# 0 names the target's SRQ in it), lengths and IPv4 checksum fixed (the ICRC is the
# target's to recompute).
python3 - "$seeds" "$tseeds" <<'PY'
import os, re, struct, sys
src, dst = sys.argv[1], sys.argv[2]
RC_RESPONSES = range(0x0d, 0x13)
def as_xrc(frame):
    if len(frame) < 54 or frame[12:14] != b'\x08\x00' or frame[23] != 17:
        return frame
    ihl = (frame[14] & 15) * 4
    bth = 14 + ihl + 8
    if frame[bth - 6:bth - 4] != struct.pack('>H', 4791) or frame[bth] >= 0x20:
        return frame
    op = frame[bth]
    f = bytearray(frame)
    f[bth] = 0xa0 | op
    if op not in RC_RESPONSES:
        f[bth + 12:bth + 12] = b'\x00\x00\x00\x01'
        struct.pack_into('>H', f, 16, struct.unpack_from('>H', f, 16)[0] + 4)
        struct.pack_into('>H', f, 14 + ihl + 4, struct.unpack_from('>H', f, 14 + ihl + 4)[0] + 4)
        struct.pack_into('>H', f, 24, 0)
        words = struct.unpack('>%dH' % (ihl // 2), bytes(f[14:14 + ihl]))
        c = sum(words)
        while c >> 16:
            c = (c & 0xffff) + (c >> 16)
        struct.pack_into('>H', f, 24, ~c & 0xffff)
    return bytes(f)
stems = {}
for name in os.listdir(src):
    m = re.fullmatch(r'(.+\.pcap(?:-[a-z0-9]+)?)-([0-9]+)', name)
    if m:
        stems.setdefault(m.group(1), []).append((int(m.group(2)), name))
for stem, files in sorted(stems.items()):
    variant = stem.rsplit('.pcap', 1)[1]
    if variant not in ('', '-v6'):
        continue
    files.sort()
    step = 3 if variant == '' else 6
    for w, start in enumerate(range(0, len(files), step)):
        for xrc in (False, True) if variant == '' else (False,):
            out = bytearray([0, 0, 0, 0, 0, w & 7, 0, 0])
            for _, name in files[start:start + 6]:
                with open(os.path.join(src, name), 'rb') as f:
                    frame = f.read()
                if xrc:
                    frame = as_xrc(frame)
                out += len(frame).to_bytes(2, 'big') + bytes([0x37]) + frame
            with open(os.path.join(dst, '%s-w%d%s' % (stem, start + 1, '-xrc' if xrc else '')),
                      'wb') as f:
                f.write(out)
PY
ntseeds=$(find "$tseeds" -type f | wc -l)
if ((ntseeds == 0)); then
	echo "$0: no seeds written into $tseeds" >&2
	exit 1
fi

# fuzz_ipstack_input's input (see the top of fuzz_ipstack_input.c): a config byte, then
# records. Seeds: each question the stack answers, and each answer to its questions,
# with checksums left to the target's fix-up (record op 0x04), untagged and on VLAN 5.
rm -rf "$ipseeds"
mkdir -p "$ipseeds"
python3 - "$ipseeds" <<'PY'
import os, struct, sys
out = sys.argv[1]
us, peer = bytes.fromhex('020000000001'), bytes.fromhex('02aabbccddee')
v4, p4 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
v6, p6 = bytes.fromhex('fd00' + '00' * 13 + '01'), bytes.fromhex('fd00' + '00' * 13 + '02')
sn = bytes.fromhex('ff02' + '00' * 9 + '01ff000001')
def eth(dst, typ, body, vlan):
    tag = struct.pack('>HH', 0x8100, vlan) if vlan else b''
    return dst + peer + tag + struct.pack('>H', typ) + body
def arp(op, tpa, tha, vlan, dst):
    return eth(dst, 0x0806, struct.pack('>HHBBH', 1, 0x0800, 6, 4, op) + peer + p4 + tha + tpa, vlan)
def ip4(proto, l4, vlan):
    h = struct.pack('>BBHHHBBH', 0x45, 0, 20 + len(l4), 1, 0x4000, 64, proto, 0) + p4 + v4
    return eth(us, 0x0800, h + l4, vlan)
def ip6(dst, hop, l4, vlan, mac=us, nxt=58):
    h = struct.pack('>IHBB', 0x60000000, len(l4), nxt, hop) + p6 + dst
    return eth(mac, 0x86dd, h + l4, vlan)
def rec(frame):
    return bytes([0x04]) + struct.pack('>H', len(frame)) + frame
def resolve(idx, cookie):
    return bytes([0x01, idx, cookie])
udp = struct.pack('>HHHH', 0xc000, 4791, 8 + 16, 0) + bytes(16)
for vlan, cfg in ((0, 0), (5, 1)):
    frames = {
        'arp-request': arp(1, v4, bytes(6), vlan, b'\xff' * 6),
        'echo4': ip4(1, struct.pack('>BBHHH', 8, 0, 0, 1, 1) + bytes(range(32)), vlan),
        'echo6': ip6(v6, 64, struct.pack('>BBHHH', 128, 0, 0, 1, 1) + bytes(range(32)), vlan),
        'ns': ip6(sn, 255, struct.pack('>BBHI', 135, 0, 0, 0) + v6 + bytes([1, 1]) + peer,
                  vlan, bytes.fromhex('3333ff000001')),
        'roce4': ip4(17, udp, vlan),
        'roce6': ip6(v6, 64, udp, vlan, nxt=17),
    }
    for name, f in frames.items():
        with open(os.path.join(out, '%s-v%d' % (name, vlan)), 'wb') as fh:
            fh.write(bytes([cfg]) + rec(f))
    # Questions of ours, answered; then time for them to go stale and be probed.
    na = ip6(v6, 255, struct.pack('>BBHI', 136, 0, 0, 0x60000000) + p6 + bytes([2, 1]) + peer, vlan)
    seq = (resolve(0, 1) + rec(arp(2, v4, us, vlan, us)) + resolve(4, 2) + rec(na) +
           bytes([3, 255, 3, 255, 3, 255]) + resolve(0, 3) + resolve(4, 4) + bytes([3, 20]))
    with open(os.path.join(out, 'resolve-v%d' % vlan), 'wb') as fh:
        fh.write(bytes([cfg]) + seq)
    with open(os.path.join(out, 'unanswered-v%d' % vlan), 'wb') as fh:
        fh.write(bytes([cfg | 2]) + resolve(1, 5) + resolve(5, 6) + resolve(1, 7) +
                 bytes([2, 6]) + bytes([3, 30]) * 4)
PY
nipseeds=$(find "$ipseeds" -type f | wc -l)

# fuzz_daemon_ctrl's input (see the top of fuzz_daemon_ctrl.c): records [kind, len, bytes].
# Seed: a PD, a CQ, an RC QP, a shared region and an MR on it, then receive WQEs posted
# through the ring, so mutations start from live objects. A request's first byte is its
# command's number - 1: the row's place in UROCE_CTRL_COMMANDS (lib/ctrl/uroce_ctrl.h).
rm -rf "$ctrlseeds"
mkdir -p "$ctrlseeds"
python3 - "$ctrlseeds" lib/ctrl/uroce_ctrl.h <<'PY'
import os, re, struct, sys
table = re.search(r'#define UROCE_CTRL_COMMANDS\(X\)((?:.*\\\n)*.*)', open(sys.argv[2]).read())
rows = re.findall(r'\bX\((\w+),', table.group(1))
def req(name, payload=b''):
    body = bytes([rows.index(name)]) + payload
    return bytes([0, len(body)]) + body
seq = req('ALLOC_PD')                                             # -> 1
seq += req('CREATE_CQ', struct.pack('<iIiI', 16, 0, 0, 0))        # -> 2
seq += req('CREATE_QP', struct.pack('<IIIIII', 1, 2, 2, 0, 2, 1) + struct.pack('<5I', 4, 4, 1, 1, 0))
seq += req('MAP_REGION', struct.pack('<Q', 8192))                 # -> 4
seq += req('REG_MR', struct.pack('<IIQQQII', 1, 7, 0x10000, 100, 0x10000, 0, 0) + struct.pack('<IIQQ', 4, 0, 0, 4096))
wqe = struct.pack('<QII', 9, 1, 0) + struct.pack('<QII', 0x10000, 64, 0)
seq += bytes([3, 1 + len(wqe), 3]) + wqe
seq += req('STATS', struct.pack('<II', 0, 0))
with open(os.path.join(sys.argv[1], 'objects'), 'wb') as f:
    f.write(seq)
# The PD's last handle released while the MR and QP are on it (it waits as an orphan),
# then the MR deregistered and a PD imported from nowhere.
orphan = seq + req('UNIMPORT_PD', struct.pack('<II', 1, 0)) + req('DEREG_MR', struct.pack('<II', 5, 0))
orphan += req('IMPORT_PD', struct.pack('<II', 1, 0)) + req('STATS', struct.pack('<II', 0, 0))
with open(os.path.join(sys.argv[1], 'orphan'), 'wb') as f:
    f.write(orphan)
# Edge-value records (kind 4; kinds 6 and 7 for WQEs): after its command, a selector per
# length, offset or handle field (fuzz_daemon_ctrl.c's table), then the payload's bytes.
# Selector: edge value index (low 5 bits) and how it is used (high 3: 0 as is, 5 the value
# that brings the summed fields to it, 7 keep the bytes); handles: 1 = the newest.
# Regions of a few sizes up to 2^63 - 4 KiB (sparse memfds), and a 3-page MR made of the
# largest's first page three times, its last segment's length the one that completes the
# sum to the MR's length; then a CQ, a QP and a WQE of each kind on them.
def edge(name, sels, raw=b''):
    body = bytes([rows.index(name)]) + bytes(sels) + raw
    return bytes([4, len(body)]) + body
RAW, E0, E1, EP, E3P, E256, E2_62, E2_63_P = 0xe0, 0, 1, 3, 5, 7, 21, 23
es = edge('ALLOC_PD', [])
for size in (EP, 10, 16, 19, E2_62, E2_63_P):                     # a page .. 2^63 - 4 KiB
    es += edge('MAP_REGION', [size])
es += edge('REG_MR', [1, E0, E3P, E0, 2,                          # pd, addr, length, iova, 3 segs
                      1, E0, EP, 1, E0, EP, 1, E0, 0xa0 | E3P], struct.pack('<II', 0, 7))
es += edge('CREATE_CQ', [E256, 0, E0])
es += edge('CREATE_QP', [1, 1, 1, 0, RAW, RAW, RAW, RAW, RAW, 0],
           struct.pack('<IIIIII', 0, 0, 0, 0, 2, 1) + struct.pack('<5I', 4, 4, 1, 1, 0))
# A recv WQE (kind 7) of 256 bytes at the MR's start, then a SEND (kind 6) of as many.
es += bytes([7, 1 + 7]) + bytes([1, E1, E0, E256, 1, RAW, RAW, RAW])
send = bytes([1, RAW, RAW, RAW, E0, 0, RAW, E1, E0, E0, E256, 1, RAW, RAW, RAW])
send += struct.pack('<QII', 11, 2, 2)                             # wr_id, IBV_WR_SEND, SIGNALED
es += bytes([6, len(send)]) + send
es += edge('REREG_MR', [1, 1]) + edge('DEREG_MR', [1]) + req('STATS', struct.pack('<II', 1, 0))
with open(os.path.join(sys.argv[1], 'edges'), 'wb') as f:
    f.write(es)
PY

# fuzz_cm_input's input (see the top of fuzz_cm_input.c): records [op, ...]. Seeds, per
# capture with CM MADs (rping, ib_write_bw -R, udaddy):
# - passive: a listener on the port its REQ or SIDR_REQ asks for, that request, an
#   accept, then RTU and DREQ made by reflecting what we sent (op 0xff), and time;
# - active: a connection to that port, REP (SIDR_REP) reflected from our REQ, an accept
#   (RTU), a DREQ reflected, and time;
# - replay: every MAD the capture sent to the passive host, after the listener.
rm -rf "$cmseeds"
mkdir -p "$cmseeds"
python3 - "$seeds" "$cmseeds" <<'PY'
import os, re, struct, sys
src, dst = sys.argv[1], sys.argv[2]
stems = {}
for name in os.listdir(src):
    m = re.fullmatch(r'(.+\.pcap)-([0-9]+)', name)
    if m:
        stems.setdefault(m.group(1), []).append((int(m.group(2)), name))
REFLECT = 0xff
for stem, files in sorted(stems.items()):
    mads = []
    for _, name in sorted(files):
        f = open(os.path.join(src, name), 'rb').read()
        # untagged IPv4 UD SEND Only to QP1: BTH opcode 0x64, dest QP 1, 256-byte MAD
        if len(f) < 62 + 256 or f[12:14] != b'\x08\x00' or f[23] != 17:
            continue
        if f[42] != 0x64 or f[46:50] != b'\x00\x00\x00\x01':
            continue
        mads.append((f[30:34], f[62:62 + 256]))
    req = [(ip, m) for ip, m in mads if m[16:18] in (b'\x00\x10', b'\x00\x17')]
    if not req:
        continue
    server, first = req[0]
    ud = first[16:18] == b'\x00\x17'
    port = struct.unpack('>H', first[24 + 14:24 + 16])[0]
    flag = 8 if ud else 0
    listen = bytes([1 | flag]) + struct.pack('>H', port)
    mad = lambda m: bytes([0]) + struct.pack('>H', len(m)) + m
    passive = listen + mad(first) + bytes([2, 1, 0])
    if not ud:
        passive += bytes([REFLECT, 4, REFLECT, 5])  # RTU, DREQ
    passive += bytes([4, 30, 4, 255])
    active = bytes([3 | flag]) + struct.pack('>H', port)
    active += bytes([REFLECT, 8]) if ud else bytes([REFLECT, 3, 2, 0, 0, REFLECT, 5])
    active += bytes([4, 200, 4, 255])
    replay = listen + b''.join(mad(m) for ip, m in mads if ip == server) + bytes([4, 255])
    for suffix, data in (('passive', passive), ('active', active), ('replay', replay)):
        with open(os.path.join(dst, '%s-cm-%s' % (stem, suffix)), 'wb') as fh:
            fh.write(data)
PY
ncmseeds=$(find "$cmseeds" -type f | wc -l)
if ((ncmseeds == 0)); then
	echo "$0: no CM MADs in the captures for $cmseeds" >&2
	exit 1
fi

# fuzz_flow's input (see the top of fuzz_flow.c): records [kind, len / 8, bytes]. Seed: a
# rule (Ethernet, IPv4, UDP port 5000) on QP 0, receive WQEs, a frame it takes, and the
# same frame sent with IBV_SEND_IP_CSUM.
rm -rf "$flowseeds"
mkdir -p "$flowseeds"
python3 - "$flowseeds" <<'PY'
import os, struct, sys
def rec(kind, body):
    body += bytes(-len(body) % 8)
    return bytes([kind, len(body) // 8]) + body
eth = struct.pack('<IH', 0x20, 40) + bytes(12) + b'\x08\x00' + bytes(2)  # value
eth += bytes(12) + b'\xff\xff' + bytes(2) + bytes(2)  # mask: the EtherType; padding
ip = struct.pack('<IH', 0x30, 24) + bytes(2) + bytes(4) + bytes([10, 0, 0, 1])
ip += bytes(4) + b'\xff' * 4
udp = struct.pack('<IH', 0x41, 16) + struct.pack('>HH', 5000, 0) + struct.pack('>HH', 0xffff, 0) + bytes(2)
specs = eth + ip + udp
attr = struct.pack('<IIHHBBxxI', 0, 0, 20 + len(specs), 0, 3, 1, 0) + specs
payload = bytes(range(64))
udph = struct.pack('>HHHH', 4000, 5000, 8 + len(payload), 0)
iph = bytes([0x45, 0]) + struct.pack('>H', 28 + len(payload)) + bytes(4) + bytes([64, 17, 0, 0])
iph += bytes([10, 0, 0, 2, 10, 0, 0, 1])
frame = bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0]) + iph + udph + payload
seq = rec(0, attr) + rec(3, bytes([64] * 8)) + rec(2 | 8, frame) + rec(4 | 8, frame)
with open(os.path.join(sys.argv[1], 'rule-and-frame'), 'wb') as f:
    f.write(seq)
PY

# run_target NAME SECONDS MAX_LEN SEEDS CORPUS ARTIFACTS [ARG...]: fuzzes, prints the
# summary; returns libFuzzer's exit status (non-zero on a crash, leak or timeout). ARGs go
# to libFuzzer after the seeds: options (-dict=...) and more seed directories.
run_target() {
	local name=$1 t=$2 max_len=$3 sdir=$4 corpus=$5 artifacts=$6
	local extra=("${@:7}")
	local fuzzer=$build/test/fuzz/$name log=$build/$name.log
	local rc=0 done_line runs took status cov ft corp

	mkdir -p "$corpus" "$artifacts"
	# New inputs go to the first directory (the working corpus, kept between runs);
	# crash, timeout and leak files to $artifacts.
	"$fuzzer" -max_total_time="$t" -max_len="$max_len" -timeout=10 \
		-artifact_prefix="$artifacts/" "$corpus" "$sdir" "${extra[@]}" 2>&1 | tee "$log" || rc=$?
	if ((rc != 0)); then
		echo "$name: FAILED (exit $rc); log: $log; inputs: $artifacts/" >&2
		echo "$name: replay one with: $fuzzer $artifacts/crash-<sha1>" >&2
		summary+=("$name: FAILED (exit $rc); log: $log; inputs: $artifacts/")
		return "$rc"
	fi
	done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
	if [[ -z $done_line ]]; then
		echo "$name: no 'Done N runs' line from libFuzzer; log: $log" >&2
		return 1
	fi
	runs=$(awk '{print $2}' <<<"$done_line")
	took=$(awk '{print $5}' <<<"$done_line")
	status=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
	cov=$(grep -oE 'cov: [0-9]+' <<<"$status" | awk '{print $2}' || true)
	ft=$(grep -oE 'ft: [0-9]+' <<<"$status" | awk '{print $2}' || true)
	corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$status" | awk '{print $2}' || true)
	summary+=("$name: cov ${cov:-?} ft ${ft:-?} corpus ${corp:-?} (last status line)")
	summary+=("$name: $runs runs in $took s, no crash")
}

summary=()
rc=0
echo "fuzz_wire_parse: $nseeds seeds from ${#pcaps[@]} pcaps, fuzzing for $wire_secs s"
run_target fuzz_wire_parse "$wire_secs" 9100 "$seeds" \
	"$build/fuzz-corpus" "$build/fuzz-artifacts" || rc=$?
echo "fuzz_transport_rx: $ntseeds seeds from ${#pcaps[@]} pcaps, fuzzing for $transport_secs s"
run_target fuzz_transport_rx "$transport_secs" 16384 "$tseeds" \
	"$build/fuzz-transport-corpus" "$build/fuzz-transport-artifacts" || rc2=$?
((rc != 0)) || rc=${rc2:-0}
echo "fuzz_ipstack_input: $nipseeds seeds, fuzzing for $ipstack_secs s"
run_target fuzz_ipstack_input "$ipstack_secs" 9100 "$ipseeds" \
	"$build/fuzz-ipstack-corpus" "$build/fuzz-ipstack-artifacts" || rc3=$?
echo "fuzz_daemon_ctrl: fuzzing for $ctrl_secs s"
# The dictionary: edge values as bytes, for the requests given as bytes; the regressions:
# inputs that crashed it once, run first (test/fuzz/README.md).
run_target fuzz_daemon_ctrl "$ctrl_secs" 4096 "$ctrlseeds" \
	"$build/fuzz-ctrl-corpus" "$build/fuzz-ctrl-artifacts" \
	-dict=test/fuzz/fuzz_daemon_ctrl.dict test/fuzz/regressions/fuzz_daemon_ctrl || rc4=$?
echo "fuzz_cm_input: $ncmseeds seeds from the captures' CM MADs, fuzzing for $cm_secs s"
run_target fuzz_cm_input "$cm_secs" 4096 "$cmseeds" \
	"$build/fuzz-cm-corpus" "$build/fuzz-cm-artifacts" || rc5=$?
echo "fuzz_flow: fuzzing for $flow_secs s"
run_target fuzz_flow "$flow_secs" 4096 "$flowseeds" \
	"$build/fuzz-flow-corpus" "$build/fuzz-flow-artifacts" || rc6=$?
((rc != 0)) || rc=${rc3:-0}
((rc != 0)) || rc=${rc4:-0}
((rc != 0)) || rc=${rc5:-0}
((rc != 0)) || rc=${rc6:-0}

# The summary of all, last, whatever libFuzzer printed in between.
for line in "${summary[@]}"; do
	echo "$line"
done
exit "$rc"
