#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The unmodified rdmacm-utils (rping, ucmatose, udaddy, rdma_server/rdma_client, cmtime)
# and perftest with the RDMA CM (-R) over the drop-in librdmacm.so.1 between two uroced
# (two network namespaces joined by a veth, test/integration/lib.sh): the connection
# manager runs in the daemons, the CM MADs and the data cross the veth as RoCEv2, the
# tools find each other by IP address (no TCP). Needs root (exit 77 otherwise).
#   test/rdmacm/tools.sh            (meson test -C BUILD --suite rdmacm rdmacm_tools)
# Env: RDMACM_LIB_DIR, VERBS_LIB_DIR (the folders of the built libraries), UROCED,
# UROCE_XFER, UROCE_CLI; TOOLS_ONLY="regex" runs only the cases whose label matches.
set -uo pipefail

. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/cases.sh"
: "${RDMACM_LIB_DIR:=$IT_ROOT/build/lib/rdmacm}"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${TOOLS_ONLY:=}"

it_init rdmacm_tools
rdmacm_check_installed rdmacm_tools

it_veth_pair 1500 || exit 1
# The deep af_packet ring of test/verbs/tools.sh (UD loses what overflows a shallow one).
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A"),framecnt=4096" 10.79.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B"),framecnt=4096" 10.79.0.2 1500 || exit 1
SOCK_A=$(it_sock A)
SOCK_B=$(it_sock B)
SADDR=10.79.0.1
# A unique port per run and per case (several runs may share the host; test/verbs uses
# 20000-52000 in steps of 16, this one is offset by 4).
PORT=$((20004 + (IT_ID % 2000) * 16))

rdmacm_cases
it_log "perftest listen races met and passed on the second attempt: $RACES"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS case(s) failed"
	exit 1
fi
it_log "all passed"
