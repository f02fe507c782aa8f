#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# pyverbs_fork.py: 200 fork()ed children (Python multiprocessing, fork start method) each
# connect to their parent with rdma_cm and exchange a message, while the parent's
# registered memory and heap are checked after every round. One uroced on a net_null
# port; pyverbs (Debian python3-pyverbs, unmodified) over the drop-in libibverbs.so.1 and
# librdmacm.so.1. Root (exit 77 otherwise, or without pyverbs).
#   meson test -C BUILD --suite verbs verbs_pyverbs_fork
# Env: VERBS_LIB_DIR, RDMACM_LIB_DIR (folders of the built libraries), UROCED, UROCE_XFER,
# UROCE_CLI; PYTHON (default /usr/bin/python3); FORK_ROUNDS (200); PYVERBS_PRELOAD (the
# sanitizer runtimes, for libraries built with ASan/UBSan: preloaded into python only;
# leaks are not checked, python's own would drown them).
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${RDMACM_LIB_DIR:=${VERBS_LIB_DIR%/verbs}/rdmacm}"
: "${PYTHON:=/usr/bin/python3}"

it_init verbs_pyverbs_fork
it_need_pyverbs pyverbs.cmid
it_daemon F "" "--vdev=net_null0,no-rx=1" 10.83.1.1 1500 || exit 1
# A sanitizer build's libraries need their runtime loaded first, in python only.
preload=()
if [ -n "${PYVERBS_PRELOAD:-}" ]; then
	preload=(env "LD_PRELOAD=$PYVERBS_PRELOAD"
		"ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:halt_on_error=1")
fi
LD_LIBRARY_PATH=$RDMACM_LIB_DIR:$VERBS_LIB_DIR UROCE_SOCKET=$(it_sock F) FORK_IP=10.83.1.1 \
	timeout -k 5 300 "${preload[@]}" "$PYTHON" "$(dirname "$0")/pyverbs_fork.py"
rc=$?
it_log "pyverbs_fork.py: exit $rc"
exit "$rc"
