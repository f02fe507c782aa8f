#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A squatter on uroced's control socket, for socket_squat.sh: binds PATH (mode 0666) as
a SOCK_SEQPACKET server, as uroced would, and writes to LOG a line for each connection
it accepts and for each message it receives (its size, and the descriptors that came
with it). Says "listening" first; runs until killed.
    squat_listen.py PATH LOG"""
import array
import os
import socket
import sys


def main():
    path, log = sys.argv[1:3]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(8)
    out = open(log, "w", buffering=1)
    out.write("listening\n")
    fds = array.array("i")
    while True:
        c, _ = s.accept()
        out.write("accepted\n")
        c.settimeout(3)
        try:
            while True:
                msg, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
                if not msg:
                    break
                for level, typ, data in anc:
                    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                        out.write("fds %d\n" % (len(data) // fds.itemsize))
                out.write("received %d bytes\n" % len(msg))
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main()
