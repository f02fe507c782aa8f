#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""vmlinux.py BZIMAGE OUT: write the ELF kernel a bzImage carries.

An x86 bzImage is a setup stub, a decompressor and the compressed ELF kernel. QEMU's
-kernel boots that ELF directly through its PVH note, and then the guest does not
decompress itself: under TCG that is several seconds of every boot (test/vm/image.sh).
The payload is found by its compressor's magic (Debian's kernels use xz; gzip is also
read); exit status 1, and no OUT, when there is none or it is not an ELF.
"""
import lzma
import sys
import zlib


def payload(bzimage: bytes) -> bytes:
    at = bzimage.find(b"\xfd7zXZ\x00")
    if at >= 0:
        # The stream is followed by the decompressor's trailer: take what decodes.
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(bzimage[at:])
    at = bzimage.find(b"\x1f\x8b\x08\x00")
    if at >= 0:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(bzimage[at:])
    return b""


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        elf = payload(f.read())
    if not elf.startswith(b"\x7fELF"):
        print("vmlinux.py: no xz or gzip ELF payload in " + sys.argv[1], file=sys.stderr)
        return 1
    with open(sys.argv[2], "wb") as f:
        f.write(elf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
