#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A service manager's end of the readiness protocol (systemd's sd_notify), for
service.sh: binds the datagram socket NAME (a path, or @name for an abstract one) and
writes each datagram it receives to OUT as one line of JSON: the assignments it carried,
and whether the control socket CTRL accepted a connection at the moment READY=1 came
(it must: a unit ordered after uroced may connect at once). Ends after STOPPING=1, or
after TIMEOUT seconds.
    notify_listen.py NAME CTRL OUT [TIMEOUT]"""
import json
import socket
import sys
import time


def main():
    name, ctrl, out = sys.argv[1:4]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + name[1:] if name.startswith("@") else name)
    end = time.monotonic() + timeout
    with open(out, "w", buffering=1) as f:
        print(json.dumps({"listening": True}), file=f)
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            try:
                data = s.recv(4096)
            except socket.timeout:
                break
            msg = dict(kv.split("=", 1) for kv in data.decode().split("\n") if "=" in kv)
            if msg.get("READY") == "1":
                c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    c.connect(ctrl)
                    msg["ctrl_connect"] = "ok"
                except OSError as e:
                    msg["ctrl_connect"] = e.strerror
                c.close()
            print(json.dumps(msg), file=f)
            if msg.get("STOPPING") == "1":
                break


if __name__ == "__main__":
    main()
