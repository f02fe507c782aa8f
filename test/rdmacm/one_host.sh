#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One host, one uroced: both ends of the unmodified rdmacm-utils and perftest -R over the
# drop-in librdmacm.so.1 through the SAME daemon, the client connecting to the daemon's
# own address (the CM's and the data's frames take uroced's loopback path; the port is
# net_null, no wire). Needs root (exit 77 otherwise).
#   test/rdmacm/one_host.sh            (meson test -C BUILD --suite rdmacm rdmacm_one_host)
# Env: RDMACM_LIB_DIR, VERBS_LIB_DIR, UROCED, UROCE_XFER, UROCE_CLI; TOOLS_ONLY="regex".
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/cases.sh"
: "${RDMACM_LIB_DIR:=$IT_ROOT/build/lib/rdmacm}"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${TOOLS_ONLY:=}"

it_init rdmacm_one_host
rdmacm_check_installed rdmacm_one_host

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.82.0.1 1500 || exit 1
SOCK_A=$(it_sock L)
SOCK_B=$SOCK_A
SADDR=10.82.0.1
PORT=$((20012 + (IT_ID % 2000) * 16))

rdmacm_cases
it_log "perftest listen races met and passed on the second attempt: $RACES"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS case(s) failed"
	exit 1
fi
it_log "all passed"
