#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every way uroced can fail to start ends with one line that says what went wrong and
# what to do, and a non-zero exit; what it must not do is start anyway over another
# daemon's socket. One case each (ports: net_null, af_packet and memif, no packets sent):
#   a value out of range in the file (file:line), an unknown --set key, a missing file;
#   no port named; a port that does not start (no such interface); a port another daemon
#   holds (its memif socket); not root (af_packet needs CAP_NET_RAW; the socket's folder
#   cannot be made); the control socket of a running daemon (refused, and that daemon
#   keeps serving); the DPDK file prefix of a running daemon; and no hugepages (a warning
#   that says how to reserve them, and the daemon runs).
#   start_errors.sh   (root; $UROCED, $UROCE_CLI from meson)
# Exit: 0 passed, 1 failed, 77 not root, not built.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
it_init start_errors

n=0
# fails WHAT REGEX [runuser USER] -- EAL... -- OPTIONS...: uroced must exit non-zero
# within 30 s, and of its lines that start "uroced: " and are not info or warnings,
# exactly one, matching REGEX (extended).
fails() {
	local what=$1 re=$2 rc lines
	shift 2
	local -a pre=()
	if [ "$1" = runuser ]; then
		pre=(setpriv --reuid="$2" --regid="$(id -gn "$2")" --clear-groups)
		shift 2
	fi
	shift # --
	n=$((n + 1))
	local log=$IT_DIR/case$n.log
	IT_PREFIXES+=("ue${IT_ID}c$n")
	timeout 30 "${pre[@]}" "$UROCED" --no-pci --no-huge -m 512 "--file-prefix=ue${IT_ID}c$n" \
		"$@" >"$log" 2>&1
	rc=$?
	lines=$(grep -E '^uroced: ' "$log" | grep -Ev '^uroced: (info|warning|debug): ')
	it_check "$what: exit $rc (non-zero, not the 30 s timeout)" [ "$rc" -ne 0 -a "$rc" -ne 124 ]
	if [ "$(printf '%s\n' "$lines" | grep -c .)" -eq 1 ] &&
		printf '%s\n' "$lines" | grep -Eq -- "$re"; then
		it_log "ok: $what: one line: $lines"
	else
		it_log "FAILED: $what: wanted one line matching /$re/, got:"
		printf '%s\n' "$lines"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}
null=--vdev=net_null0,no-rx=1
sock() { echo "--set control.socket=$IT_DIR/$1.sock"; }

# ---- configuration -----------------------------------------------------------------------
printf '[port]\nmtu = 99\n' >"$IT_DIR/bad.conf"
# shellcheck disable=SC2046
fails "a value out of range in the file" \
	"bad\.conf:2: port\.mtu: 99 is out of range 576\.\.9216 \(every key .*--print-config\)" \
	-- "$null" -- -c "$IT_DIR/bad.conf" $(sock c)
fails "an unknown key in --set" "--set no\.such=1: unknown key no\.such \(every key .*--print-config\)" \
	-- "$null" -- --set no.such=1
fails "a configuration file that is not there" "nothere\.conf: No such file or directory$" \
	-- "$null" -- -c "$IT_DIR/nothere.conf"

# ---- the port ----------------------------------------------------------------------------
re_noport="no port: name one in the EAL arguments, --vdev=net_af_packet0,iface=IFACE"
fails "no port named" "$re_noport" -- -- $(sock c)
fails "a port that does not start (no such interface)" "$re_noport" \
	-- --vdev=net_af_packet0,iface=nosuch$IT_ID -- $(sock c)
it_log "a memif server holds $IT_DIR/memif.sock:"
it_daemon M "" "--vdev=net_memif0,role=server,socket=$IT_DIR/memif.sock,socket-abstract=no" \
	10.87.0.1 1500 || exit 1
fails "a port another daemon holds (its memif socket)" "$re_noport" \
	-- "--vdev=net_memif0,role=server,socket=$IT_DIR/memif.sock,socket-abstract=no" -- $(sock c)

# ---- a running daemon's socket and file prefix -----------------------------------------------
fails "the control socket of a running daemon" \
	"control\.socket $IT_DIR/uroce-M\.sock is in use by a running uroced \(pid $IT_PID_M\): stop it, or give this one another control\.socket" \
	-- "$null" -- --set "control.socket=$(it_sock M)"
it_check "that daemon still serves its socket" \
	eval '"$UROCE_CLI" -S "$(it_sock M)" devinfo | grep -q uroce'
prefix_m=ux${IT_ID}M
log=$IT_DIR/prefix.log
timeout 30 "$UROCED" --no-pci --no-huge -m 512 "--file-prefix=$prefix_m" "$null" -- $(sock p) \
	>"$log" 2>&1
rc=$?
it_check "the DPDK file prefix of a running daemon: exit $rc" [ "$rc" -ne 0 -a "$rc" -ne 124 ]
it_check "it says a second uroced needs its own --file-prefix" \
	grep -q "^uroced: DPDK's EAL did not start: the EAL lines above say why; a second uroced on this host needs its own --file-prefix$" "$log"

# ---- not root ----------------------------------------------------------------------------
if setpriv --reuid=nobody --regid="$(id -gn nobody)" --clear-groups test -x "$UROCED"; then
	fails "not root: af_packet" "$re_noport.*; af_packet and af_xdp need root or CAP_NET_RAW$" \
		runuser nobody -- --vdev=net_af_packet0,iface=lo -- \
		--set "control.socket=/tmp/ue$IT_ID-nobody.sock"
	mkdir -m 755 "$IT_DIR/rootonly"
	fails "not root: the socket's folder" \
		"control\.socket: cannot create folder $IT_DIR/rootonly/sub: Permission denied: run uroced as root, or set control\.socket in a folder this user owns" \
		runuser nobody -- "$null" -- --set "control.socket=$IT_DIR/rootonly/sub/x.sock"
else
	it_log "nobody cannot run $UROCED (its folders are closed to others): not-root cases not run"
fi

# ---- no hugepages: a warning that says what to do, and the daemon runs ------------------
# In a mount namespace of its own without hugetlbfs: whatever this host has reserved, the
# daemon finds nothing to use.
log=$IT_DIR/nohuge.log
sockn=$IT_DIR/nohuge.sock
IT_PREFIXES+=("ue${IT_ID}nh")
unshare -m --propagation private sh -c '
	awk "\$3 == \"hugetlbfs\" { print \$2 }" /proc/mounts | while read -r m; do umount -l "$m"; done
	exec "$@"' sh "$UROCED" --no-pci "--file-prefix=ue${IT_ID}nh" "$null" -- \
	--set "control.socket=$sockn" >"$log" 2>&1 &
pid=$!
IT_PIDS+=("$pid")
it_wait_ready "$log" "$pid"
it_check "no hugepages: it warns and says how to reserve them" \
	grep -Eq "^uroce_ethdev: warning: no (free hugepages|hugetlbfs mounted): falling back to --no-huge -m 512; reserve some with echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages" "$log"
it_check "no hugepages: and runs" grep -q '^uroced: ready' "$log"
kill -TERM "$pid" 2>/dev/null
it_reap "$pid"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "start_errors: all checks passed"
exit 0
