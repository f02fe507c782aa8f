#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `uroce exec` and `uroce env` run unmodified RDMA programs over uroce, and say what is
# missing when they cannot; `meson install` puts the drop-in libibverbs.so.1 and
# librdmacm.so.1 in <libdir>/uroce, where they shadow nothing. One uroced on a net_null
# port (no packets leave), rdma-core's ibv_devinfo and ibv_devices as the programs:
#   - exec -- ibv_devinfo shows uroce0 with its port active; exec -d uroce0 finds the
#     device by name; the exports `env` prints make ibv_devices list it;
#   - no such device, no daemon at the socket, no drop-in libraries: exit 1 with the
#     reason; no such program: 127 as a shell says it; no program: 2;
#   - meson install --destdir: the libraries under <libdir>/uroce and not in <libdir>,
#     and the installed uroce finds them there (UROCE_LIBDIR standing in for the
#     destdir).
#   uroce_exec.sh   (root; $UROCED, $UROCE_CLI, $BUILD_ROOT from meson)
# Exit: 0 passed, 1 failed, 77 not root, no ibverbs-utils, not built.
set -uo pipefail
# meson points LD_LIBRARY_PATH at the build's libraries: here only uroce may.
unset LD_LIBRARY_PATH
. "$(dirname "$0")/lib.sh"
: "${BUILD_ROOT:=$IT_ROOT/build}"
it_init uroce_exec
it_need_tools ibverbs-utils ibv_devinfo ibv_devices

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.86.0.1 1500 || exit 1
sock=$(it_sock L)
cli=$UROCE_CLI

# The control: the system's libibverbs knows no uroce device.
UROCE_SOCKET=$sock ibv_devices >"$IT_DIR/system.out" 2>&1
it_check "without uroce exec, ibv_devices (the system's library) lists no uroce0" \
	test -z "$(grep uroce0 "$IT_DIR/system.out")"

"$cli" -S "$sock" exec -- ibv_devinfo >"$IT_DIR/devinfo.out" 2>&1
rc=$?
it_check "exec -- ibv_devinfo (exit $rc)" test "$rc" -eq 0
it_check "it shows uroce0" grep -q 'hca_id:[[:space:]]*uroce0' "$IT_DIR/devinfo.out"
it_check "with its port active" grep -q 'state:[[:space:]]*PORT_ACTIVE' "$IT_DIR/devinfo.out"
sed -n '1,3p' "$IT_DIR/devinfo.out" | sed 's/^/    /'
"$cli" -S "$sock" exec -d uroce0 -- ibv_devinfo -d uroce0 >/dev/null 2>&1
it_check "exec -d uroce0 finds the device by name" test $? -eq 0

"$cli" -S "$sock" env >"$IT_DIR/env.out" 2>&1
it_check "env (exit $?)" test -s "$IT_DIR/env.out"
sed 's/^/    /' "$IT_DIR/env.out"
(unset UROCE_SOCKET; eval "$(cat "$IT_DIR/env.out")" && ibv_devices) >"$IT_DIR/devices.out" 2>&1
it_check "its exports make ibv_devices list uroce0" grep -q 'uroce0' "$IT_DIR/devices.out"

"$cli" -S "$sock" exec -d nosuch -- true 2>"$IT_DIR/nodev.err"
rc=$?
it_check "no such device: exit 1 ($rc), said" \
	test "$rc" -eq 1 -a -n "$(grep 'no device nosuch' "$IT_DIR/nodev.err")"
"$cli" -S "$IT_DIR/none.sock" exec -- true 2>"$IT_DIR/nodaemon.err"
rc=$?
it_check "no daemon at the socket: exit 1 ($rc), said" \
	test "$rc" -eq 1 -a -n "$(grep 'no uroced answers' "$IT_DIR/nodaemon.err")"
UROCE_LIBDIR=$IT_DIR/nolibs "$cli" -S "$sock" exec -- true 2>"$IT_DIR/nolibs.err"
rc=$?
it_check "no drop-in libraries: exit 1 ($rc), said" \
	test "$rc" -eq 1 -a -n "$(grep 'are not in' "$IT_DIR/nolibs.err")"
"$cli" -S "$sock" exec -- "$IT_DIR/no-such-program" 2>/dev/null
rc=$?
it_check "no such program: 127 ($rc)" test "$rc" -eq 127
"$cli" -S "$sock" exec 2>/dev/null
rc=$?
it_check "no program: 2 ($rc)" test "$rc" -eq 2

dest=$IT_DIR/dest
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$dest" >"$IT_DIR/install.out" 2>&1
it_check "meson install --destdir (exit $?)" test -d "$dest"
prefix=$(meson introspect "$BUILD_ROOT" --buildoptions |
	python3 -c 'import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"] + "/" + o["libdir"])')
it_log "installed libraries under $prefix:" \
	"$(cd "$dest$prefix" 2>/dev/null && find . -name 'lib*.so.1' | sort | tr '\n' ' ')"
it_check "libibverbs.so.1 and librdmacm.so.1 in <libdir>/uroce" \
	test -e "$dest$prefix/uroce/libibverbs.so.1" -a -e "$dest$prefix/uroce/librdmacm.so.1"
it_check "and not in <libdir>, where they would shadow the system's" \
	test ! -e "$dest$prefix/libibverbs.so.1" -a ! -e "$dest$prefix/librdmacm.so.1"
installed=$(find "$dest" -path '*/bin/uroce' -type f | head -n 1)
UROCE_LIBDIR=$dest$prefix/uroce "$installed" -S "$sock" exec -- ibv_devices \
	>"$IT_DIR/installed.out" 2>&1
it_check "the installed uroce runs ibv_devices over the installed libraries" \
	grep -q uroce0 "$IT_DIR/installed.out"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "uroce_exec: all checks passed"
exit 0
