#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""pyverbs (Debian python3-pyverbs, unmodified) over the drop-in libibverbs.so.1.

Run by pyverbs_loopback.sh with LD_LIBRARY_PATH at the build's lib/verbs and
UROCE_SOCKET at one uroced. Checks that the libibverbs.so.1 mapped into this process
is the one in $VERBS_LIB_DIR, then: open the device, query device / port / GIDs / P_Key,
PD, MRs, two CQs each with a completion channel, two RC QPs of the same device
connected to each other, and SEND/RECV (with and without immediate), RDMA WRITE (with
and without immediate), RDMA READ, FETCH_AND_ADD and CMP_AND_SWP (a hit and a miss)
between them; every byte and every returned value is checked. Completions are waited
for through the channels (req_notify, get_cq_event, ack). Then CQ.resize, MR.rereg
(access) and SRQ.modify (max_wr), with a WRITE through the first two. Exit 0 on success.
"""
import os
import random
import signal
import socket
import struct
import sys

# A hung verb must not hang the test: SIGALRM's default action ends the process.
signal.alarm(int(os.environ.get("PYVERBS_TIMEOUT", "60")))

import pyverbs.enums as e  # noqa: E402  (loads libibverbs.so.1)
from pyverbs.addr import AHAttr, GID, GlobalRoute  # noqa: E402
from pyverbs.cq import CQ, CompChannel  # noqa: E402
from pyverbs.device import Context, get_device_list  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


# ---- which libibverbs.so.1 is mapped ---------------------------------------------------
want_dir = os.environ.get("VERBS_LIB_DIR")
libs = set()
with open("/proc/self/maps") as f:
    for line in f:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if "libibverbs.so" in os.path.basename(path):
            libs.add(os.path.realpath(path))
print("libibverbs mapped: %s" % ", ".join(sorted(libs)))
check(len(libs) == 1, "exactly one libibverbs.so mapped")
if want_dir:
    ours = os.path.realpath(os.path.join(want_dir, "libibverbs.so.1"))
    check(libs == {ours}, "it is ours (%s)" % ours)

# ---- device, queries ---------------------------------------------------------------------
devs = [d.name.decode() for d in get_device_list()]
print("devices: %s" % devs)
check(len(devs) >= 1 and devs[0].startswith("uroce"), "a uroce device is listed")
ctx = Context(name=devs[0])
da = ctx.query_device()
print("device: fw_ver %s node_guid 0x%x vendor_id 0x%x max_qp %d max_cqe %d max_mr_size %d "
      "atomic_cap %d" % (da.fw_version, da.node_guid, da.vendor_id, da.max_qp, da.max_cqe,
                         da.max_mr_size, da.atomic_caps))
check(da.max_qp > 0 and da.max_cqe > 0 and da.phys_port_cnt == 1, "query_device")
check(da.vendor_id not in (0x02c9, 0x1d0f), "vendor id is neither Mellanox's nor Amazon's")
pa = ctx.query_port(1)
print("port 1: state %d active_mtu %d link_layer %d gid_tbl_len %d" %
      (pa.state, pa.active_mtu, pa.link_layer, pa.gid_tbl_len))
check(pa.state == e.IBV_PORT_ACTIVE and pa.link_layer == e.IBV_LINK_LAYER_ETHERNET,
      "query_port: active, Ethernet")
check(ctx.query_pkey(1, 0) == 0xffff, "query_pkey(1, 0) == 0xffff")
gidx = None
for i in range(pa.gid_tbl_len):
    try:
        g = ctx.query_gid(1, i)
    except Exception:  # unused entries
        continue
    gtype = ctx.query_gid_type(1, i)
    print("GID[%d] %s type %d" % (i, g, gtype))
    raw = bytes.fromhex(str(g).replace(":", ""))
    if raw[:12] == b"\0" * 10 + b"\xff\xff" and gidx is None:
        gidx = i
        check(gtype == e.IBV_GID_TYPE_SYSFS_ROCE_V2, "the IPv4 GID is RoCE v2")
check(gidx is not None, "an IPv4-mapped GID")
if gidx is None:
    sys.exit(1)
gex = ctx.query_gid_ex(1, gidx)
print("query_gid_ex(1, %d): %s type %d" % (gidx, gex.gid_str(), gex.gid_type))
check(gex.gid_index == gidx and gex.gid_type == e.IBV_GID_TYPE_ROCE_V2 and
      gex.gid_str().replace(":", "") == str(ctx.query_gid(1, gidx)).replace(":", ""),
      "query_gid_ex agrees")
table = ctx.query_gid_table(pa.gid_tbl_len)
check(any(t.gid_index == gidx for t in table), "query_gid_table lists it (%d entries)" % len(table))

# ---- objects -------------------------------------------------------------------------------
SIZE = 8192
ACC = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
       e.IBV_ACCESS_REMOTE_ATOMIC)
pd = PD(ctx)
mra, mrb = MR(pd, SIZE, ACC), MR(pd, SIZE, ACC)
mra.write(b"\0" * SIZE, SIZE)
mrb.write(b"\0" * SIZE, SIZE)
cca, ccb = CompChannel(ctx), CompChannel(ctx)
cqa, cqb = CQ(ctx, 64, None, cca, 0), CQ(ctx, 64, None, ccb, 0)
cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
qpa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
qpb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
print("PD, MRs (lkey/rkey 0x%x/0x%x, 0x%x/0x%x), 2 channels, 2 CQs, RC QPs 0x%x and 0x%x" %
      (mra.lkey, mra.rkey, mrb.lkey, mrb.rkey, qpa.qp_num, qpb.qp_num))
gid = ctx.query_gid(1, gidx)


def connect(qp, peer, psn, peer_psn):
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.qp_access_flags = ACC
    attr.pkey_index = 0
    qp.to_init(attr)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = peer.qp_num
    attr.rq_psn = peer_psn
    attr.max_dest_rd_atomic = 4
    attr.min_rnr_timer = 12
    gr = GlobalRoute(dgid=GID(str(gid)), sgid_index=gidx, hop_limit=64)
    attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr, dlid=0)
    qp.to_rtr(attr)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.sq_psn = psn
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.max_rd_atomic = 4
    qp.to_rts(attr)


psna, psnb = random.randint(0, 0xffffff), random.randint(0, 0xffffff)
connect(qpa, qpb, psna, psnb)
connect(qpb, qpa, psnb, psna)
qattr, _ = qpa.query(e.IBV_QP_STATE | e.IBV_QP_DEST_QPN)
check(qattr.qp_state == e.IBV_QPS_RTS and qattr.dest_qp_num == qpb.qp_num,
      "QP A in RTS towards QP B (query_qp)")

EVENTS = {"a": 0, "b": 0}


def wait(cq, cc, name, n):
    """n completions of cq, sleeping on its channel when it is empty."""
    got = []
    while len(got) < n:
        cnt, wcs = cq.poll(n - len(got))
        got += wcs[:cnt]
        if len(got) == n:
            break
        cq.req_notify()
        cnt, wcs = cq.poll(n - len(got))  # what came before the notification was armed
        got += wcs[:cnt]
        if cnt:
            continue
        cc.get_cq_event(cq)
        cq.ack_events(1)
        EVENTS[name] += 1
    for wc in got:
        if wc.status != e.IBV_WC_SUCCESS:
            check(False, "completion wr_id %d status %d" % (wc.wr_id, wc.status))
    return got


def pattern(n, seed):
    return bytes((i * 7 + seed) & 0xff for i in range(n))


def send_wr(wr_id, opcode, off, length, imm=None):
    wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1,
                sg=[SGE(mra.buf + off, length, mra.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    if imm is not None:
        wr.imm_data = socket.htonl(imm)
    return wr


# SEND / RECV, then SEND with immediate: B receives into its MR at 0 and 2048.
p1 = pattern(1000, 1)
mra.write(p1, len(p1), 0)
qpb.post_recv(RecvWR(wr_id=11, num_sge=1, sg=[SGE(mrb.buf, 2048, mrb.lkey)]))
qpb.post_recv(RecvWR(wr_id=12, num_sge=1, sg=[SGE(mrb.buf + 2048, 2048, mrb.lkey)]))
cqb.req_notify()  # armed while empty: the first receive must raise an event
qpa.post_send(send_wr(1, e.IBV_WR_SEND, 0, 1000))
qpa.post_send(send_wr(2, e.IBV_WR_SEND_WITH_IMM, 0, 999, imm=0x1234abcd))
ccb.get_cq_event(cqb)
cqb.ack_events(1)
EVENTS["b"] += 1
rb = wait(cqb, ccb, "b", 2)
sa = wait(cqa, cca, "a", 2)
check([w.wr_id for w in sa] == [1, 2] and all(w.opcode == e.IBV_WC_SEND for w in sa),
      "SEND: 2 send completions")
check([w.wr_id for w in rb] == [11, 12] and all(w.opcode == e.IBV_WC_RECV for w in rb) and
      [w.byte_len for w in rb] == [1000, 999] and rb[0].qp_num == qpb.qp_num,
      "RECV: 2 receive completions of 1000 and 999 B")
check(not rb[0].wc_flags & e.IBV_WC_WITH_IMM and rb[1].wc_flags & e.IBV_WC_WITH_IMM and
      socket.ntohl(rb[1].imm_data) == 0x1234abcd, "SEND_WITH_IMM: immediate 0x1234abcd")
check(mrb.read(1000, 0) == p1 and mrb.read(999, 2048) == p1[:999], "SEND: data received")

# RDMA WRITE of 3000 B (3 packets at MTU 1024) into B at 4096, then WRITE with immediate.
p2 = pattern(3000, 2)
mra.write(p2, len(p2), 1024)
wr = send_wr(3, e.IBV_WR_RDMA_WRITE, 1024, 3000)
wr.set_wr_rdma(mrb.rkey, mrb.buf + 4096)
qpa.post_send(wr)
sa = wait(cqa, cca, "a", 1)
check(sa[0].opcode == e.IBV_WC_RDMA_WRITE, "WRITE: completion")
check(mrb.read(3000, 4096) == p2, "WRITE: 3000 B written")
qpb.post_recv(RecvWR(wr_id=13, num_sge=1, sg=[SGE(mrb.buf, 16, mrb.lkey)]))
wr = send_wr(4, e.IBV_WR_RDMA_WRITE_WITH_IMM, 1024, 100, imm=0x77)
wr.set_wr_rdma(mrb.rkey, mrb.buf + 7168)
qpa.post_send(wr)
sa = wait(cqa, cca, "a", 1)
rb = wait(cqb, ccb, "b", 1)
check(rb[0].opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and socket.ntohl(rb[0].imm_data) == 0x77 and
      rb[0].byte_len == 100 and mrb.read(100, 7168) == p2[:100], "WRITE_WITH_IMM: data, immediate")

# RDMA READ of 2500 B from B at 4096 (what the WRITE put there, then changed by B).
p3 = pattern(2500, 3)
mrb.write(p3, len(p3), 4096)
mra.write(b"\0" * 2500, 2500, 4096)
wr = send_wr(5, e.IBV_WR_RDMA_READ, 4096, 2500)
wr.set_wr_rdma(mrb.rkey, mrb.buf + 4096)
qpa.post_send(wr)
sa = wait(cqa, cca, "a", 1)
check(sa[0].opcode == e.IBV_WC_RDMA_READ and mra.read(2500, 4096) == p3, "READ: 2500 B read")

# Atomics on B's u64 at 7680 (8-byte aligned), results into A at 7680.
U64 = struct.Struct("=Q")
mrb.write(U64.pack(1000), 8, 7680)


def atomic(wr_id, opcode, add_or_cmp, swap):
    wr = send_wr(wr_id, opcode, 7680, 8)
    wr.set_wr_atomic(mrb.rkey, mrb.buf + 7680, add_or_cmp, swap)
    qpa.post_send(wr)
    w = wait(cqa, cca, "a", 1)[0]
    return w.opcode, U64.unpack(mra.read(8, 7680))[0], U64.unpack(mrb.read(8, 7680))[0]


op, old, now = atomic(6, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 23, 0)
check(op == e.IBV_WC_FETCH_ADD and old == 1000 and now == 1023,
      "FETCH_AND_ADD +23: returned %d, now %d" % (old, now))
op, old, now = atomic(7, e.IBV_WR_ATOMIC_CMP_AND_SWP, 1023, 0xfedcba9876543210)
check(op == e.IBV_WC_COMP_SWAP and old == 1023 and now == 0xfedcba9876543210,
      "CMP_AND_SWP hit: returned %d, now 0x%x" % (old, now))
op, old, now = atomic(8, e.IBV_WR_ATOMIC_CMP_AND_SWP, 5, 9)
check(old == 0xfedcba9876543210 and now == 0xfedcba9876543210,
      "CMP_AND_SWP miss: returned 0x%x, unchanged" % old)

check(EVENTS["a"] > 0 and EVENTS["b"] > 0,
      "completion channels: %d events on A's CQ, %d on B's" % (EVENTS["a"], EVENTS["b"]))

# ibv_resize_cq, ibv_rereg_mr and an SRQ's resize, through pyverbs' own calls.
cqa.resize(300)
check(cqa.cqe >= 300, "CQ.resize(300): cqe %d" % cqa.cqe)
old_keys = (mrb.lkey, mrb.rkey)
mrb.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, pd, 0, 0, ACC)
print("MR.rereg(access): keys 0x%x/0x%x, were 0x%x/0x%x" % ((mrb.lkey, mrb.rkey) + old_keys))
p4 = pattern(700, 4)
mra.write(p4, len(p4), 0)
wr = send_wr(9, e.IBV_WR_RDMA_WRITE, 0, 700)
wr.set_wr_rdma(mrb.rkey, mrb.buf + 512)
qpa.post_send(wr)
sa = wait(cqa, cca, "a", 1)
check(sa[0].wr_id == 9 and mrb.read(700, 512) == p4,
      "WRITE after CQ.resize and MR.rereg: completed on the resized CQ, data there")
srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
srq.modify(SrqAttr(max_wr=64), e.IBV_SRQ_MAX_WR)
check(srq.query().max_wr >= 64, "SRQ.modify(max_wr 64): max_wr %d" % srq.query().max_wr)
srq.close()

for o in (qpa, qpb, cqa, cqb, cca, ccb, mra, mrb, pd, ctx):
    o.close()
if FAILS:
    print("pyverbs_loopback: %d check(s) failed" % len(FAILS))
    sys.exit(1)
print("pyverbs_loopback: all checks passed")
