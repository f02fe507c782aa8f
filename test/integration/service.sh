#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroced as a system service: what `meson install` lays out, the systemd unit, and the
# readiness protocol the unit relies on (Type=notify). systemd is not PID 1 here, so the
# unit is checked by systemd-analyze and its command line is run as systemd would run it:
#   - meson install --destdir: uroced in sbin (not bin), uroced.conf in <sysconfdir>/uroce
#     equal to config/uroced.conf, uroced@.service in <prefix>/lib/systemd/system;
#   - `systemd-analyze verify uroced@eth1.service` against the installed tree prints
#     nothing, and does complain about a broken copy (so the check can fail);
#   - the unit's ExecStart, with %i a veth in a netns and its Environment's EAL arguments,
#     run from the installed tree with the installed configuration copied to <if>.conf,
#     with only the unit's CapabilityBoundingSet and no_new_privs (setpriv), and as its
#     UROCED_USER a user the test makes, who owns the socket's folder as tmpfiles.d gives
#     /run/uroce to the unit's (uroce, made by sysusers.d): it sends READY=1 with MAINPID
#     its pid, only once its control socket accepts (the listener connects the moment
#     READY=1 arrives), runs as that user with no capability, serves `uroce devinfo`,
#     sends STOPPING=1 on SIGTERM and exits 0; the same with an abstract NOTIFY_SOCKET;
#   - a program built with `pkg-config --cflags --libs uroce-client` from the installed
#     tree (headers, static libraries, .pc) talks to the daemon the unit runs;
#   - a configuration error: exit non-zero with file:line, and no READY=1.
#   service.sh   (root; $UROCED, $UROCE_CLI, $BUILD_ROOT from meson)
# Exit: 0 passed, 1 failed, 77 not root, no systemd-analyze, not built.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
: "${BUILD_ROOT:=$IT_ROOT/build}"
it_init service
it_need_tools systemd systemd-analyze
it_need_tools python3 python3
it_need_tools "setpriv (util-linux)" setpriv
SVC=uroce-v$$
it_user "$SVC" --system -U || exit 1
listen=$(dirname "$0")/notify_listen.py

# ---- the installed tree ----------------------------------------------------------------
root=$IT_DIR/root
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$root" >"$IT_DIR/install.out" 2>&1
it_check "meson install --destdir (exit $?)" test -d "$root"
meson introspect "$BUILD_ROOT" --buildoptions >"$IT_DIR/options.json"
opt() {
	python3 -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == sys.argv[2]))' \
		"$IT_DIR/options.json" "$1"
}
prefix=$(opt prefix)
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
sbin=$(abs "$(opt sbindir)")
bin=$(abs "$(opt bindir)")
etc=$(abs "$(opt sysconfdir)")
unitdir=$(opt systemd_unit_dir)
[ -n "$unitdir" ] || unitdir=$prefix/lib/systemd/system
unit=$root$unitdir/uroced@.service
it_check "uroced installs in $sbin, not in $bin" \
	test -x "$root$sbin/uroced" -a ! -e "$root$bin/uroced"
it_check "uroced.conf installs in $etc/uroce, every key at its default" \
	cmp -s "$root$etc/uroce/uroced.conf" "$IT_ROOT/config/uroced.conf"
it_check "uroced@.service installs in $unitdir" test -f "$unit"
[ -f "$unit" ] || exit 1
it_check "sysusers.d makes the system user uroce" \
	grep -Eq '^u uroce ' "$root$prefix/lib/sysusers.d/uroce.conf"
it_check "tmpfiles.d gives /run/uroce to uroce" \
	grep -Eq '^d /run/uroce 0755 uroce uroce' "$root$prefix/lib/tmpfiles.d/uroce.conf"
it_check "the unit's daemon becomes uroce" grep -q '^Environment="UROCED_USER=uroce"$' "$unit"

# ---- systemd-analyze verify --------------------------------------------------------------
# It resolves the units the service names (sysinit.target, the device) in the root it is
# given: the host's own units stand in for a system's.
for d in /usr/lib/systemd/system /lib/systemd/system; do
	if [ -d "$d" ] && [ ! -L "${d%/systemd/system}" ]; then
		mkdir -p "$root${d%/system}"
		cp -r "$d" "$root${d%/system}/"
	fi
done
verify() {
	systemd-analyze verify --root="$root" --man=no "$1" >"$IT_DIR/verify-$1.out" 2>&1
	local rc=$?
	cat "$IT_DIR/verify-$1.out"
	[ "$rc" -eq 0 ] && [ ! -s "$IT_DIR/verify-$1.out" ]
}
it_check "systemd-analyze verify uroced@eth1.service prints nothing" verify uroced@eth1.service
sed -e 's/^Type=notify/Type=notfy/' -e "s|^ExecStart=$sbin/uroced|ExecStart=$sbin/nouroced|" \
	"$unit" >"$root$unitdir/uroced-broken@.service"
it_check "systemd-analyze verify complains about a broken copy of it" \
	eval '! verify uroced-broken@eth1.service >/dev/null'

# ---- the unit's command line, run as systemd runs it --------------------------------------
it_veth_pair 1500 || exit 1
ifc=$IT_IF_A
# ExecStart with its continuation lines joined; %i and $UROCED_EAL as systemd expands them.
exec_line=$(sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' "$unit" | sed -n 's/^ExecStart=//p')
eal=$(sed -n 's/^Environment="UROCED_EAL=\(.*\)"$/\1/p' "$unit")
line=${exec_line//\$UROCED_EAL/$eal}
line=${line//%i/$ifc}
line=${line//$sbin\//$root$sbin/}
line=${line//$etc\//$root$etc/}
line=${line//\/run\/uroce\//$IT_DIR/run/}
line=${line//\$\{UROCED_USER\}/$SVC}
# The unit's bounding set, as setpriv takes it: CAP_NET_RAW CAP_MKNOD -> -all,+net_raw,+mknod
bset=$(sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' "$unit" | sed -n 's/^CapabilityBoundingSet=//p')
bset=-all$(for c in $bset; do printf ',+%s' "$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done)
read -ra cmd <<<"$line"
cmd=(setpriv "--bounding-set=$bset" --inh-caps=-all --no-new-privs "${cmd[@]}")
chmod 0755 "$IT_DIR"
install -d -m 0755 -o "$SVC" -g "$SVC" "$IT_DIR/run"
ctrl=$IT_DIR/run/$ifc.sock
IT_PREFIXES+=("uroce-$ifc")
it_log "the unit's command: ${cmd[*]}"
conf=$root$etc/uroce/$ifc.conf
sed 's/^ipv4 =.*/ipv4 = 10.89.0.1/' "$root$etc/uroce/uroced.conf" >"$conf"

# run_notified TAG NOTIFY_SOCKET: the listener, then the daemon with $NOTIFY_SOCKET; waits
# for READY=1 or the daemon's end (30 s). Sets pid and out.
run_notified() {
	local tag=$1 name=$2 t
	out=$IT_DIR/notify-$tag.out
	# In the daemon's netns: an abstract name is the netns's own, as a path is not.
	ip netns exec "$IT_NS_A" python3 "$listen" "$name" "$ctrl" "$out" 60 &
	IT_PIDS+=($!)
	until grep -q listening "$out" 2>/dev/null; do sleep 0.05; done
	NOTIFY_SOCKET=$name ip netns exec "$IT_NS_A" "${cmd[@]}" >"$IT_DIR/$tag.log" 2>&1 &
	pid=$!
	IT_PIDS+=("$pid")
	for t in $(seq 300); do
		grep -q '"READY": "1"' "$out" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
field() {
	python3 -c 'import json, sys
print(next((m[sys.argv[2]] for m in map(json.loads, open(sys.argv[1])) if sys.argv[2] in m), ""))' \
		"$1" "$2"
}

for notify in "$IT_DIR/notify.sock" "@uroce-it-notify-$IT_ID"; do
	tag=path
	[ "${notify:0:1}" = @ ] && tag=abstract
	run_notified "$tag" "$notify"
	it_check "$tag NOTIFY_SOCKET: READY=1 came" grep -q '"READY": "1"' "$out"
	it_check "$tag: MAINPID is the daemon's pid ($pid)" [ "$(field "$out" MAINPID)" = "$pid" ]
	it_check "$tag: the control socket accepted at READY=1 ($(field "$out" ctrl_connect))" \
		[ "$(field "$out" ctrl_connect)" = ok ]
	it_check "$tag: STATUS names the socket ($(field "$out" STATUS))" \
		eval '[[ "$(field "$out" STATUS)" == *"$ctrl"* ]]'
	it_check "$tag: the daemon runs as $SVC ($(grep -E '^Uid' /proc/"$pid"/status))" \
		eval '[ "$(awk '\''/^Uid/ { print $2 $3 $4 $5 }'\'' /proc/"$pid"/status)" = \
			"$(id -u "$SVC")$(id -u "$SVC")$(id -u "$SVC")$(id -u "$SVC")" ]'
	it_check "$tag: with no capability ($(grep -E '^CapEff' /proc/"$pid"/status))" \
		grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/"$pid"/status
	it_check "$tag: uroce devinfo through the unit's socket" \
		eval '"$UROCE_CLI" -S "$ctrl" devinfo >"$IT_DIR/devinfo.out" 2>&1'
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	it_check "$tag: SIGTERM: the daemon exits 0 (exit $rc)" [ "$rc" -eq 0 ]
	for t in $(seq 50); do grep -q STOPPING "$out" && break; sleep 0.1; done
	it_check "$tag: STOPPING=1 came" grep -q '"STOPPING": "1"' "$out"
done

# A program of the installed client library's, against the daemon the unit runs.
libdir=$(abs "$(opt libdir)")
cat >"$IT_DIR/client.c" <<'CEOF'
#include <stdio.h>
#include <uroce_client.h>

int main(int argc, char **argv)
{
	struct uroce_client_ctx *ctx = uroce_client_open(argv[argc - 1]);
	struct ibv_device_attr attr;

	if (!ctx || uroce_client_query_device(ctx, &attr) != 0)
		return 1;
	printf("%s max_qp %d\n", uroce_client_dev_name(ctx), attr.max_qp);
	uroce_client_close(ctx);
	return 0;
}
CEOF
pc_flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root$libdir/pkgconfig \
	pkg-config --cflags --libs uroce-client)
it_check "pkg-config uroce-client from the installed tree ($pc_flags)" [ -n "$pc_flags" ]
# shellcheck disable=SC2086
cc -o "$IT_DIR/client" "$IT_DIR/client.c" $pc_flags >"$IT_DIR/cc.out" 2>&1
it_check "a program builds against it" eval '[ -x "$IT_DIR/client" ] || { cat "$IT_DIR/cc.out"; false; }'
run_notified client "$IT_DIR/notify-client.sock"
"$IT_DIR/client" "$ctrl" >"$IT_DIR/client.out" 2>&1
it_check "and talks to the unit's daemon ($(cat "$IT_DIR/client.out"))" \
	grep -Eq '^uroce0 max_qp [1-9][0-9]*$' "$IT_DIR/client.out"
kill -TERM "$pid"
wait "$pid"

# A configuration error: the daemon says where and never announces readiness.
echo "no_such_key = 1" >>"$conf"
run_notified badconf "$IT_DIR/notify-bad.sock"
wait "$pid"
rc=$?
it_check "bad configuration: exit non-zero (exit $rc)" [ "$rc" -ne 0 ]
it_check "bad configuration: the error names $ifc.conf and the line" \
	grep -q "$ifc.conf:[0-9]" "$IT_DIR/badconf.log"
it_check "bad configuration: no READY=1" eval '! grep -q READY "$out"'

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "service: all checks passed"
exit 0
