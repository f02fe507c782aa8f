#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The exported ABI of a drop-in library equals its reference (rdma-core 44's): the set
of name@@NODE / name@NODE / NODE entries that `readelf --dyn-syms -W` shows as defined
must be exactly EXPORTS (lib/verbs/libibverbs.exports, lib/rdmacm/librdmacm.exports).
Lists any difference.

usage: check_abi.py READELF LIBRARY EXPORTS
"""
import subprocess
import sys


def exported(readelf, lib):
    out = subprocess.run([readelf, '--dyn-syms', '-W', lib], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or not f[0].rstrip(':').isdigit() or f[6] == 'UND':
            continue
        if f[4] == 'LOCAL':
            continue
        syms.add(f[7])
    return syms


def main():
    readelf, lib, ref = sys.argv[1:4]
    want = {l.strip() for l in open(ref, encoding='ascii') if l.strip() and not l.startswith('#')}
    got = exported(readelf, lib)
    missing, extra = sorted(want - got), sorted(got - want)
    for s in missing:
        print(f'missing: {s}')
    for s in extra:
        print(f'extra:   {s}')
    print(f'{lib}: {len(got)} exported, reference {len(want)}: '
          f'{len(missing)} missing, {len(extra)} extra')
    sys.exit(1 if missing or extra else 0)


if __name__ == '__main__':
    main()
