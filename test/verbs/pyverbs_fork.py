#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""fork() under a long verbs program: pyverbs (Debian python3-pyverbs, unmodified) and
multiprocessing with the fork start method, as rdma-core's own tests run rdma_cm.

Run by pyverbs_fork.sh with LD_LIBRARY_PATH at the build's lib/verbs and lib/rdmacm and
UROCE_SOCKET at one uroced whose address is $FORK_IP. The parent holds registered memory
(a guard MR with a known pattern, and the MRs of its listening and accepted ids) and a
Python heap full of objects; it listens with rdma_cm. Each of $FORK_ROUNDS rounds forks
a child that first scribbles over the inherited guard MR's buffer, then connects to the
parent with its own rdma_cm id, sends a message, gets it echoed back and checks it. The
parent checks after every round that its guard bytes and its heap objects are what they
were. Before the fix the children's writes reached the parent and glibc aborted on a
corrupted heap. Exit 0 when every round passed.
"""
import hashlib
import multiprocessing
import os
import signal
import sys

signal.alarm(int(os.environ.get("PYVERBS_TIMEOUT", "300")))

import pyverbs.cm_enums as ce  # noqa: E402
from pyverbs.cmid import AddrInfo, CMID  # noqa: E402
from pyverbs.device import Context, get_device_list  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
import pyverbs.enums as e  # noqa: E402
from pyverbs.qp import QPCap, QPInitAttr  # noqa: E402

IP = os.environ["FORK_IP"]
PORT = os.environ.get("FORK_PORT", "7471")
ROUNDS = int(os.environ.get("FORK_ROUNDS", "200"))
N = 256


def qp_init_attr():
    return QPInitAttr(cap=QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1,
                                max_recv_sge=1))


def wait_comp(get):
    while True:
        wc = get()
        if wc is not None:
            if wc.status != e.IBV_WC_SUCCESS:
                raise RuntimeError("completion status %d" % wc.status)
            return wc


def message(k):
    return bytes(((k * 7 + i) & 0xff) for i in range(N))


def child(k, guard):
    # Inherited registered memory is the child's own copy: scribble over all of it.
    guard.write(b"\xee" * N, N)
    cm = CMID(creator=AddrInfo(dst=IP, dst_service=PORT, port_space=ce.RDMA_PS_TCP),
              qp_init_attr=qp_init_attr())
    cm.connect()
    mr = cm.reg_msgs(N)
    cm.post_recv(mr, N)
    mr_out = cm.reg_msgs(N)
    mr_out.write(message(k), N)
    cm.post_send(mr_out, 0, N)
    wait_comp(cm.get_send_comp)
    wait_comp(cm.get_recv_comp)
    ok = mr.read(N, 0) == message(k)
    cm.disconnect()
    os._exit(0 if ok else 3)


def main():
    names = [d.name.decode() for d in get_device_list()]
    if not names or not names[0].startswith("uroce"):
        print("FAIL: no uroce device listed (devices: %s): not our libibverbs?" % names)
        return 1
    ctx = Context(name=names[0])
    pd = PD(ctx)
    guard = MR(pd, N, e.IBV_ACCESS_LOCAL_WRITE)
    pattern = bytes((i * 13) & 0xff for i in range(N))
    guard.write(pattern, N)
    # A heap of ordinary objects the children's writes would corrupt first.
    heap = [("object-%d" % i) * (1 + i % 7) for i in range(20000)]
    heap_sum = hashlib.sha256("".join(heap).encode()).hexdigest()

    listener = CMID(creator=AddrInfo(src=IP, src_service=PORT, port_space=ce.RDMA_PS_TCP,
                                     flags=ce.RAI_PASSIVE),
                    qp_init_attr=qp_init_attr())
    listener.listen()
    forking = multiprocessing.get_context("fork")
    for k in range(ROUNDS):
        p = forking.Process(target=child, args=(k, guard))
        p.start()
        conn = listener.get_request()
        mr = conn.reg_msgs(N)
        conn.post_recv(mr, N)
        conn.accept()
        wait_comp(conn.get_recv_comp)
        conn.post_send(mr, 0, N)
        wait_comp(conn.get_send_comp)
        # Both ends disconnect (a synchronous rdma_disconnect waits for the other's
        # answer, which its CM sends when that end disconnects too).
        conn.disconnect()
        p.join(30)
        if p.exitcode != 0:
            print("FAIL round %d: child exit %s" % (k, p.exitcode))
            if p.exitcode is None:
                p.kill()
            return 1
        conn.close()
        mr.close()
        if guard.read(N, 0) != pattern:
            print("FAIL round %d: the child's writes reached the parent's guard MR" % k)
            return 1
        if hashlib.sha256("".join(heap).encode()).hexdigest() != heap_sum:
            print("FAIL round %d: the parent's heap changed" % k)
            return 1
        if (k + 1) % 50 == 0:
            print("ok   %d rounds: children connected, echoed, parent memory intact" % (k + 1))
    print("pyverbs_fork: all %d rounds passed" % ROUNDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
