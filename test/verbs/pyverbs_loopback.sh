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
if ! "$PYTHON" -c 'import pyverbs.device' 2>/dev/null; then
	echo "verbs_pyverbs: $PYTHON has no pyverbs (apt-get install python3-pyverbs); skipped"
	exit 77
fi
if [ ! -e "$VERBS_LIB_DIR/libibverbs.so.1" ]; then
	echo "verbs_pyverbs: $VERBS_LIB_DIR/libibverbs.so.1 not built; skipped"
	exit 77
fi

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.83.0.1 1500 || exit 1
LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$(it_sock L) VERBS_LIB_DIR=$VERBS_LIB_DIR \
	timeout -k 5 120 "$PYTHON" "$(dirname "$0")/pyverbs_loopback.py"
rc=$?
it_log "pyverbs_loopback.py: exit $rc"
exit "$rc"
