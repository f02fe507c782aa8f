#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""compare.py: do two sets of Linux rxe captures agree in what the tests check?

  compare.py REF_DIR NEW_DIR [NAME[:MODE]...]     (make.sh --compare runs it)

For every capture NAME (default: every *.pcap of REF_DIR, mode "seq"), NEW_DIR/NAME.pcap
is read the way the tests read it (test/wire, test/transport/test_rxe_replay.c, test/cm)
and compared with REF_DIR/NAME.pcap in what does not change from one run to the next:

  wire       every frame is Ethernet/IPv4/UDP to port 4791 with a valid BTH and a correct
             ICRC; the headers that rxe fills the same way every time agree (IP DF, TTL,
             TOS, UDP checksum, BTH TVer, P_Key, MigReq, reserved bits, Q_Keys, pad,
             the UDP source port of QP1, a hash of its QPN).
  seq        per direction (198.18.0.1 to .2, and back), the packets in order: opcode,
             payload length, SE, AckReq, AETH syndrome, DMA length, atomic operands,
             CM attribute for MADs to QP1; once the retransmissions that timing makes are
             set aside (a request whose PSN that QP already sent, a response already sent,
             a MAD already sent).
  seq-dreq   seq, but for the CM's DREQs and DREPs: when both ends disconnect at once,
             which end sends a DREQ for which connection, and when, is timing; there
             must be DREQs, and a DREP for each.
  kinds      for what is random by nature (netem loss, RNR timing): the same kinds of
             packet per direction (the seq items, without the lengths of READs, which
             a retried READ shortens), and as many PSNs covered by the requests when
             the reference holds the whole run (its last request answered).

Not compared, because every run draws them anew: QPNs, PSNs, rkeys, VAs, UDP source
ports (a hash of the QPNs), IP IDs, MSNs, immediates that carry a QPN, CM communication
IDs, TIDs and starting PSNs, and the timing. Exit 0 when every capture agrees at its mode.
"""
import os
import struct
import sys
import zlib

ROCE_PORT = 4791
GSI_QPN = 1

# BTH opcode (low 5 bits) -> (name, extension headers after the BTH, in order)
RC_OPS = {
    0: ("SEND_FIRST", ()), 1: ("SEND_MIDDLE", ()), 2: ("SEND_LAST", ()),
    3: ("SEND_LAST_IMM", ("imm",)), 4: ("SEND_ONLY", ()), 5: ("SEND_ONLY_IMM", ("imm",)),
    6: ("WRITE_FIRST", ("reth",)), 7: ("WRITE_MIDDLE", ()), 8: ("WRITE_LAST", ()),
    9: ("WRITE_LAST_IMM", ("imm",)), 10: ("WRITE_ONLY", ("reth",)),
    11: ("WRITE_ONLY_IMM", ("reth", "imm")), 12: ("READ_REQ", ("reth",)),
    13: ("READ_RESP_FIRST", ("aeth",)), 14: ("READ_RESP_MIDDLE", ()),
    15: ("READ_RESP_LAST", ("aeth",)), 16: ("READ_RESP_ONLY", ("aeth",)),
    17: ("ACK", ("aeth",)), 18: ("ATOMIC_ACK", ("aeth", "atomicack")),
    19: ("CMP_SWAP", ("atomic",)), 20: ("FETCH_ADD", ("atomic",)),
    22: ("SEND_LAST_INV", ("ieth",)), 23: ("SEND_ONLY_INV", ("ieth",)),
}
UD_OPS = {4: ("SEND_ONLY", ("deth",)), 5: ("SEND_ONLY_IMM", ("deth", "imm"))}
TRANSPORTS = {0: ("RC", RC_OPS), 1: ("UC", RC_OPS), 3: ("UD", UD_OPS)}
EXT_LEN = {"imm": 4, "reth": 16, "aeth": 4, "atomicack": 8, "atomic": 28, "ieth": 4,
           "deth": 8}
CM_ATTRS = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU",
            0x15: "DREQ", 0x16: "DREP", 0x17: "SIDR_REQ", 0x18: "SIDR_REP"}


class Bad(Exception):
    pass


def read_pcap(path):
    """The frames of a classic pcap file (what tcpdump and dumpcap -P write)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise Bad("%s: not a pcap file" % path)
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise Bad("%s: not a classic pcap file (pcapng?)" % path)
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype != 1:
        raise Bad("%s: link type %d, not Ethernet" % (path, linktype))
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, wirelen = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        if caplen != wirelen:
            raise Bad("%s: frame %d cut to %d of %d bytes" % (path, len(frames) + 1,
                                                              caplen, wirelen))
        frames.append(data[off:off + caplen])
        off += caplen
    if off != len(data):
        raise Bad("%s: damaged after frame %d" % (path, len(frames)))
    return frames


def icrc(frame, ip_off):
    """RoCEv2's invariant CRC: CRC-32 over 8 bytes of ones and the IP datagram with the
    variant fields (TOS, TTL, IP and UDP checksums, BTH FECN/BECN/reserved) set to ones."""
    ihl = (frame[ip_off] & 0x0F) * 4
    total = struct.unpack(">H", frame[ip_off + 2:ip_off + 4])[0]
    d = bytearray(frame[ip_off:ip_off + total - 4])
    d[1] = 0xFF                    # TOS
    d[8] = 0xFF                    # TTL
    d[10:12] = b"\xff\xff"         # header checksum
    d[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    d[ihl + 8 + 4] = 0xFF          # BTH byte 4: FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(d)) & 0xFFFFFFFF


def parse(frame, no):
    """One RoCEv2 frame as a dict of its fields; raises Bad for anything else."""
    if len(frame) < 14 + 20 + 8 + 12 + 4:
        raise Bad("#%d: %d bytes, too short for RoCEv2" % (no, len(frame)))
    if struct.unpack(">H", frame[12:14])[0] != 0x0800:
        raise Bad("#%d: not IPv4" % no)
    ip = 14
    ihl = (frame[ip] & 0x0F) * 4
    total, ipid, frag = struct.unpack(">HHH", frame[ip + 2:ip + 8])
    if frame[ip + 9] != 17:
        raise Bad("#%d: not UDP" % no)
    udp = ip + ihl
    sport, dport, ulen, ucsum = struct.unpack(">HHHH", frame[udp:udp + 8])
    if dport != ROCE_PORT:
        raise Bad("#%d: UDP port %d, not %d" % (no, dport, ROCE_PORT))
    if ip + total > len(frame) or ulen != total - ihl:
        raise Bad("#%d: IP length %d, UDP length %d, frame %d" % (no, total, ulen,
                                                                 len(frame)))
    bth = udp + 8
    opcode, flags, pkey, resv8, qpn_hi, qpn_lo, ack_psn = struct.unpack(
        ">BBHBBHI", frame[bth:bth + 12])
    transport, ops = TRANSPORTS.get(opcode >> 5, (None, None))
    if ops is None or (opcode & 0x1F) not in ops:
        raise Bad("#%d: opcode 0x%02x" % (no, opcode))
    name, exts = ops[opcode & 0x1F]
    p = {
        "no": no, "src": ".".join(map(str, frame[ip + 12:ip + 16])),
        "dst": ".".join(map(str, frame[ip + 16:ip + 20])), "sport": sport,
        "df": (frag >> 14) & 1, "mf_off": frag & 0x3FFF, "ttl": frame[ip + 8],
        "tos": frame[ip + 1], "ihl": ihl, "udp_csum": ucsum,
        "opcode": opcode, "op": "%s_%s" % (transport, name), "transport": transport,
        "se": flags >> 7, "mig": (flags >> 6) & 1, "pad": (flags >> 4) & 3,
        "tver": flags & 0xF, "pkey": pkey, "resv8": resv8, "dqpn": qpn_hi << 16 | qpn_lo,
        "ack_req": ack_psn >> 31, "resv7": (ack_psn >> 24) & 0x7F,
        "psn": ack_psn & 0xFFFFFF,
    }
    off = bth + 12
    for e in exts:
        h = frame[off:off + EXT_LEN[e]]
        if len(h) < EXT_LEN[e]:
            raise Bad("#%d: %s cut short" % (no, e))
        if e == "reth":
            p["va"], p["rkey"], p["dma_len"] = struct.unpack(">QII", h)
        elif e == "aeth":
            syn, msn_hi, msn_lo = struct.unpack(">BBH", h)
            p["syndrome"], p["msn"] = syn, msn_hi << 16 | msn_lo
        elif e == "atomic":
            p["va"], p["rkey"], p["swap_add"], p["compare"] = struct.unpack(">QIQQ", h)
        elif e == "atomicack":
            p["orig"] = struct.unpack(">Q", h)[0]
        elif e == "deth":
            p["qkey"], p["src_qpn"] = struct.unpack(">II", h)
            p["src_qpn"] &= 0xFFFFFF
        elif e == "imm":
            p["imm"] = struct.unpack(">I", h)[0]
        elif e == "ieth":
            p["ieth"] = struct.unpack(">I", h)[0]
        off += EXT_LEN[e]
    end = ip + total - 4
    if off > end:
        raise Bad("#%d: headers run past the datagram" % no)
    plen = end - off - p["pad"]
    if plen < 0:
        raise Bad("#%d: pad %d longer than the payload" % (no, p["pad"]))
    p["payload_len"] = plen
    p["payload"] = frame[off:off + plen]
    if p["dqpn"] == GSI_QPN and plen >= 24:
        mclass, method = p["payload"][1], p["payload"][3]
        attr, = struct.unpack(">H", p["payload"][16:18])
        p["mad"] = "%s/%02x/%02x" % (CM_ATTRS.get(attr, "attr%04x" % attr), mclass, method)
        p["tid"] = p["payload"][8:16]
    got = struct.unpack("<I", frame[end:end + 4])[0]
    if got != icrc(frame, ip):
        raise Bad("#%d: ICRC 0x%08x, computed 0x%08x" % (no, got, icrc(frame, ip)))
    return p


def load(path):
    return [parse(f, i + 1) for i, f in enumerate(read_pcap(path))]


def invariants(pkts):
    """What rxe sets the same way in every packet of every run."""
    inv = set()
    for p in pkts:
        inv.add(("IP DF/TTL/TOS/IHL", (p["df"], p["ttl"], p["tos"], p["ihl"])))
        inv.add(("UDP checksum", p["udp_csum"]))
        inv.add(("BTH TVer/P_Key/MigReq/reserved", (p["tver"], p["pkey"], p["mig"],
                                                    p["resv8"], p["resv7"])))
        if "qkey" in p:
            inv.add(("DETH Q_Key to QP%s" % ("1" if p["dqpn"] == GSI_QPN else "n"),
                     p["qkey"]))
        inv.add(("pad fits the payload", (p["payload_len"] + p["pad"]) % 4 == 0))
        if p.get("src_qpn") == GSI_QPN:
            # A function of the QPN alone, and QP1 is QP1 in every run.
            inv.add(("UDP source port of QP1", p["sport"]))
    return inv


def is_request(p):
    return p["transport"] in ("RC", "UC") and not (
        p["op"].endswith("ACK") or "READ_RESP" in p["op"])


def token(p, kinds_only=False):
    """A packet as the sequence comparison sees it."""
    t = [p["op"]]
    if "mad" in p:
        t.append("MAD " + p["mad"])
    if not kinds_only or "READ" not in p["op"]:
        t.append("len %d" % p["payload_len"])
    if p["se"]:
        t.append("SE")
    if p["ack_req"]:
        t.append("AckReq")
    if "syndrome" in p:
        kind = ("ACK", "RNR_NAK", "reserved", "NAK")[p["syndrome"] >> 5]
        t.append("%s %d" % (kind, p["syndrome"] & 0x1F))
    if "dma_len" in p and not kinds_only:
        t.append("dmalen %d" % p["dma_len"])
    if "swap_add" in p:
        t.append("swap_add %d compare %d" % (p["swap_add"], p["compare"]))
    return " ".join(t)


def path_mtu(pkts):
    """What FIRST and MIDDLE packets carry; 1024 (rxe's default here) without them."""
    return max([p["payload_len"] for p in pkts
                if p["op"].endswith(("_FIRST", "_MIDDLE")) and "READ_REQ" not in p["op"]] or
               [1024])


def sequences(pkts, kinds_only=False):
    """Per direction, the tokens in order, retransmissions set aside; and the number of
    PSNs the requests cover per direction (a READ covers its responses' PSNs)."""
    seen, seqs, psns, dups, mtu = set(), {}, {}, 0, path_mtu(pkts)
    for p in pkts:
        d = "%s>%s" % (p["src"], p["dst"])
        if "mad" in p:
            key = (d, "mad", p["mad"], p["tid"])
        elif p["transport"] == "UD":
            key = None
        elif is_request(p):
            key = (d, "req", p["dqpn"], p["psn"])
            n = -(-p["dma_len"] // mtu) if p["op"].endswith("READ_REQ") else 1
            psns.setdefault(d, set()).update((p["dqpn"], (p["psn"] + i) & 0xFFFFFF)
                                             for i in range(max(n, 1)))
        else:
            key = (d, "resp", p["dqpn"], p["psn"], p["opcode"], p.get("syndrome"))
        if key is not None:
            if key in seen:
                dups += 1
                continue
            seen.add(key)
        seqs.setdefault(d, []).append(token(p, kinds_only))
    return seqs, {d: len(s) for d, s in psns.items()}, dups


def answered(pkts):
    """The directions whose last request the other end answered (ACK, READ response,
    ATOMIC ACK of its last PSN): the capture holds the whole run of that requester."""
    last, done, mtu = {}, set(), path_mtu(pkts)
    for p in pkts:
        if p["transport"] == "RC" and is_request(p):
            n = -(-p["dma_len"] // mtu) if p["op"].endswith("READ_REQ") else 1
            last["%s>%s" % (p["src"], p["dst"])] = (p["psn"] + max(n, 1) - 1) & 0xFFFFFF
    for p in pkts:
        d = "%s>%s" % (p["dst"], p["src"])
        if p["transport"] == "RC" and not is_request(p) and p.get("syndrome", 0) >> 5 == 0 \
                and last.get(d) == p["psn"]:
            done.add(d)
    return done


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    i = min(len(a), len(b))
    return i, (a[i] if i < len(a) else "(end)"), (b[i] if i < len(b) else "(end)")


def compare(ref_path, new_path, mode):
    """(ok, [lines]) for one capture."""
    try:
        ref = load(ref_path)
    except (Bad, OSError) as e:
        return False, ["reference: %s" % e]
    try:
        new = load(new_path)
    except (Bad, OSError) as e:
        return False, ["%s" % e]
    ok, out = True, []
    ri, ni = invariants(ref), invariants(new)
    for what, v in sorted(ni - ri, key=str):
        ok = False
        out.append("header %s is %r here, never in the reference" % (what, v))
    for what, v in sorted(ri - ni, key=str):
        ok = False
        out.append("header %s is %r in the reference, never here" % (what, v))
    kinds_only = mode == "kinds"
    whole = answered(ref)
    rs, rp, _ = sequences(ref, kinds_only)
    ns, np_, dups = sequences(new, kinds_only)
    if dups:
        out.append("%d retransmission(s) set aside" % dups)
    for d in sorted(set(rs) | set(ns)):
        a, b = rs.get(d, []), ns.get(d, [])
        if mode == "seq-dreq":
            # Both ends disconnect at once: which DREQs there are, from which end and in
            # what order is timing. Taken out here, checked over the capture below.
            a = [t for t in a if not t.startswith("UD_SEND_ONLY MAD DRE")]
            b = [t for t in b if not t.startswith("UD_SEND_ONLY MAD DRE")]
        if mode.startswith("seq"):
            if a != b:
                ok = False
                i, x, y = first_difference(a, b)
                out.append("%s: %d packets, reference %d; packet %d is \"%s\", reference "
                           "\"%s\"" % (d, len(b), len(a), i + 1, y, x))
        else:
            ka, kb = set(a), set(b)
            for k in sorted(kb - ka):
                ok = False
                out.append("%s: \"%s\" here, not in the reference" % (d, k))
            for k in sorted(ka - kb):
                ok = False
                out.append("%s: \"%s\" in the reference, not here" % (d, k))
            # A reference cut short (the first packets of a run) covers what it covers.
            if d in whole and rp.get(d, 0) != np_.get(d, 0):
                ok = False
                out.append("%s: the requests cover %d PSNs, reference %d" %
                           (d, np_.get(d, 0), rp.get(d, 0)))
    if mode == "seq-dreq":
        for what, pkts in (("reference", ref), ("here", new)):
            dreq = {p["tid"] for p in pkts if p.get("mad", "").startswith("DREQ")}
            drep = {p["tid"] for p in pkts if p.get("mad", "").startswith("DREP")}
            if not dreq or dreq != drep:
                ok = False
                out.append("%s: %d DREQs, %d answered by a DREP" % (what, len(dreq),
                                                                   len(dreq & drep)))
    out.insert(0, "%d packets, reference %d" % (len(new), len(ref)))
    return ok, out


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    ref_dir, new_dir = argv[1], argv[2]
    names = argv[3:] or sorted(f[:-5] for f in os.listdir(ref_dir) if f.endswith(".pcap"))
    bad = 0
    for spec in names:
        name, _, mode = spec.partition(":")
        mode = mode or "seq"
        ok, lines = compare(os.path.join(ref_dir, name + ".pcap"),
                            os.path.join(new_dir, name + ".pcap"), mode)
        print("%-20s %-9s %s" % (name, mode, "agrees" if ok else "DIFFERS"))
        for line in lines:
            print("    " + line)
        bad += not ok
    print("%d of %d captures agree with %s" % (len(names) - bad, len(names), ref_dir))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
