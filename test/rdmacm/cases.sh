# SPDX-License-Identifier: BSD-3-Clause
#
# The cases of tools.sh and one_host.sh (sourced by both, after test/integration/lib.sh):
# the unmodified rdmacm-utils and perftest -R over the drop-in librdmacm.so.1 and
# libibverbs.so.1 (nothing but LD_LIBRARY_PATH points at the build). Servers use daemon
# A, clients daemon B (one_host.sh: the same daemon); the CM exchange and the data go
# through the daemons (RDMA CM: no TCP side channel), to the server's address SADDR.
# Needs: RDMACM_LIB_DIR, VERBS_LIB_DIR, SOCK_A, SOCK_B, SADDR, PORT; TOOLS_ONLY="regex"
# runs only the cases whose label matches.

rdmacm_check_installed() { # NAME: exit 77 unless the tools and the libraries are there
	for t in rping ucmatose udaddy mckey rdma_server rdma_client cmtime ib_send_lat ib_send_bw \
		ib_write_lat ib_write_bw ib_read_lat ib_read_bw ib_atomic_lat ib_atomic_bw; do
		if ! command -v "$t" >/dev/null; then
			echo "$1: $t not installed (rdmacm-utils, perftest); skipped"
			exit 77
		fi
	done
	for l in "$RDMACM_LIB_DIR/librdmacm.so.1" "$VERBS_LIB_DIR/libibverbs.so.1"; do
		if [ ! -e "$l" ]; then
			echo "$1: $l not built; skipped"
			exit 77
		fi
	done
}

on() { # on A|B CMD...: a tool of that side
	local sock=$SOCK_A
	[ "$1" = B ] && sock=$SOCK_B
	shift
	LD_LIBRARY_PATH=$RDMACM_LIB_DIR:$VERBS_LIB_DIR UROCE_SOCKET=$sock "$@"
}

want() { [ -z "$TOOLS_ONLY" ] || [[ $1 =~ $TOOLS_ONLY ]]; }

# server_ready LABEL PID LISTENING0: waits until the server just started on A listens:
# daemon A counts more listening rdma_cm ids than LISTENING0 (at most the 60 s a program
# could take to start on a loaded machine; not at all once it died). A fixed second's
# wait let a slow server be raced by its client. mckey listens on nothing (both ends join
# a group, the receiver first): it gets the second.
server_ready() {
	if [ "$1" = mckey ]; then
		sleep 1
		return
	fi
	it_wait_cm_listening "$SOCK_A" "$3" "$2" 60
}

# pair LABEL TIMEOUT SERVER ARGS... -- CLIENT ARGS...: the server on A, then the client
# on B; both must exit 0. "@PORT" in the arguments is this case's port. The client's
# output is printed (FILTER: a grep pattern of the lines kept, all if empty).
FILTER=
SERVER_STAYS=
RACES=0
pair() {
	local label=$1 tmo=$2 attempt
	shift 2
	want "$label" || return 0
	local -a srv0=() cli0=() srv=() cli=()
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		srv0+=("$1")
		shift
	done
	shift
	cli0=("$@")
	local slog=$IT_DIR/server.out clog=$IT_DIR/client.out t0=$SECONDS rs rc spid a listening0
	for attempt in 1 2; do
		PORT=$((PORT + 1))
		srv=() cli=()
		for a in "${srv0[@]}"; do srv+=("${a//@PORT/$PORT}"); done
		for a in "${cli0[@]}"; do cli+=("${a//@PORT/$PORT}"); done
		listening0=$(it_stat "$SOCK_A" cm.listening)
		on A timeout -k 5 "$tmo" "${srv[@]}" >"$slog" 2>&1 &
		spid=$!
		server_ready "$label" "$spid" "$listening0"
		if [ "$attempt" -eq 1 ]; then
			on B timeout -k 5 "$tmo" "${cli[@]}" >"$clog" 2>&1
		else
			on B env LD_PRELOAD="$CONNECT_DELAY_LIB" UROCE_TEST_CONNECT_DELAY_MS=500 \
				timeout -k 5 "$tmo" "${cli[@]}" >"$clog" 2>&1
		fi
		rc=$?
		if [ -n "$SERVER_STAYS" ] || [ "$rc" -ne 0 ]; then
			# A server that never exits by itself (cmtime) passed if it was still
			# serving when the client finished; after a failed client, nobody will
			# come: stop it rather than wait for its timeout.
			if kill -0 "$spid" 2>/dev/null; then
				kill "$spid"
				wait "$spid"
				rs=$([ -n "$SERVER_STAYS" ] && echo 0 || echo 143)
			else
				wait "$spid"
				rs=$?
			fi
		else
			wait "$spid"
			rs=$?
		fi
		if [ "$rc" -eq 0 ] && [ "$rs" -eq 0 ]; then
			it_log "PASS $label ($((SECONDS - t0)) s): ${cli[*]}$([ "$attempt" -eq 2 ] &&
				echo ' (2nd attempt, rdma_connect delayed)')"
			it_show "$clog"
			return 0
		fi
		it_log "FAIL $label (attempt $attempt): client exit $rc, server exit $rs ($((SECONDS - t0)) s)"
		it_log "  server: ${srv[*]}"
		it_log "  client: ${cli[*]}"
		echo "---- client"
		tail -n 30 "$clog"
		echo "---- server"
		tail -n 30 "$slog"
		# perftest -R's listen race: its client sends the data connection's REQ right
		# after its out-of-band handshake, its server only then listens; when the REQ
		# wins, the server's CM answers REJ "no listener" (8), or for UD a SIDR_REP
		# "service ID not supported" (1, which librdmacm reports as UNREACHABLE with
		# that status), and perftest's retry crashes on ids it freed (doc/rdmacm.md).
		# Once more, the client's rdma_connect delayed by the preloaded shim
		# (test/rdmacm/connect_delay.c).
		if [ "$attempt" -eq 1 ] && [ -e "${CONNECT_DELAY_LIB:-}" ] &&
			grep -qE 'RDMA_CM_EVENT_REJECTED; error: 8|RDMA_CM_EVENT_UNREACHABLE; error: 1\.' \
				"$clog"; then
			it_log "  perftest's listen race (REJ 8 / SIDR 1): once more with rdma_connect delayed 0.5 s"
			RACES=$((RACES + 1))
			continue
		fi
		break
	done
	IT_FAILS=$((IT_FAILS + 1))
	return 1
}

rdmacm_cases() {
	# ---- rdmacm-utils ----
	FILTER='^(ping data: rdma-ping-9|rping|client|server|cmatose|udaddy|rdma_client|rdma_server|test complete|return status|.*connect|.*time|[a-z ]+:? +[0-9.]+)'
	pair "rping" 60 rping -s -a "$SADDR" -p @PORT -v -V -C 100 -S 64 -- \
		rping -c -a "$SADDR" -p @PORT -v -V -C 100 -S 64
	pair "ucmatose" 60 ucmatose -b "$SADDR" -p @PORT -c 4 -C 10 -- \
		ucmatose -s "$SADDR" -p @PORT -c 4 -C 10
	# udaddy has no port option (its -p is the port space): it always uses 7174.
	pair "udaddy" 60 udaddy -b "$SADDR" -c 4 -C 10 -- udaddy -s "$SADDR" -c 4 -C 10
	pair "rdma_server/rdma_client" 60 rdma_server -s "$SADDR" -p @PORT -- \
		rdma_client -s "$SADDR" -p @PORT
	# mckey: the receiver joins a group and waits for 10 messages, the sender joins
	# send-only and sends them to the group (QPN 0xffffff) as UD.
	pair "mckey" 60 mckey -m 239.1.2.3 -b "$SADDR" -C 10 -- mckey -m 239.1.2.3 -s -C 10
	FILTER=
	SERVER_STAYS=1 # cmtime's server serves until it is stopped
	pair "cmtime" 120 cmtime -b "$SADDR" -p @PORT -c 20 -- cmtime -s "$SADDR" -p @PORT -c 20
	SERVER_STAYS=

	# ---- perftest over the RDMA CM (-R) ----
	FILTER='^ *[0-9]+ +[0-9]+ '
	local -a pt=(-d uroce0 -R -F -p @PORT)
	local t
	for t in "ib_send_lat -s 64" "ib_send_bw -s 4096" "ib_send_bw -c UD -s 1024" \
		"ib_write_lat -s 64" "ib_write_bw -s 65536" "ib_read_lat -s 64" \
		"ib_read_bw -s 65536" "ib_atomic_lat" "ib_atomic_bw"; do
		# shellcheck disable=SC2086 # $t is a command line
		pair "$t -R" 120 $t "${pt[@]}" -n 1000 -- $t "${pt[@]}" -n 1000 "$SADDR"
	done
}
