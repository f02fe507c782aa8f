#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# pyverbs (Debian python3-pyverbs, unmodified) over the drop-in libibverbs.so.1: one
# uroced on a net_null port, and pyverbs_loopback.py between two RC QPs of its device
# with LD_LIBRARY_PATH at the build's lib/verbs and UROCE_SOCKET at the daemon (the
# script checks in /proc/self/maps that ours is the libibverbs.so.1 loaded). Needs root
# and /usr/bin/python3 with pyverbs (exit 77 otherwise).
#   test/verbs/pyverbs_loopback.sh     (meson test -C BUILD --suite verbs verbs_pyverbs)
# Env: VERBS_LIB_DIR (the folder of the built libibverbs.so.1), UROCED, UROCE_XFER,
# UROCE_CLI; PYTHON (default /usr/bin/python3: Debian's pyverbs is built for it).
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${PYTHON:=/usr/bin/python3}"

it_init verbs_pyverbs
it_need_pyverbs pyverbs.device
it_need_built "$VERBS_LIB_DIR/libibverbs.so.1"

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.83.0.1 1500 || exit 1
LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$(it_sock L) VERBS_LIB_DIR=$VERBS_LIB_DIR \
	timeout -k 5 120 "$PYTHON" "$(dirname "$0")/pyverbs_loopback.py"
rc=$?
it_log "pyverbs_loopback.py: exit $rc"
exit "$rc"
