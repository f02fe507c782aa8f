# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the integration scripts: two network namespaces joined by a veth pair (or a
# memif pair), a uroced on each end, cleanup of everything on any exit.
#
#   . "$(dirname "$0")/lib.sh"
#   it_init two_hosts                # unique names, temp dir, trap; exits 77 unless root
#   it_veth_pair 1500                # netns $IT_NS_A/$IT_NS_B, veth $IT_IF_A/$IT_IF_B
#   it_daemon A "$IT_NS_A" "--vdev=net_af_packet0,iface=$IT_IF_A" 10.77.0.1 1500
#   it_daemon B "$IT_NS_B" "--vdev=net_af_packet0,iface=$IT_IF_B" 10.77.0.2 1500
#   "$UROCE_XFER" -S "$(it_sock A)" ops ...
#
# Binaries: $UROCED, $UROCE_XFER, $UROCE_CLI (meson passes them; defaults: ./build).
# The applications run in the root namespace: the control socket is a path (reachable
# from any netns) and their TCP exchange goes over 127.0.0.1.

IT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${UROCED:=$IT_ROOT/build/app/uroced/uroced}"
: "${UROCE_XFER:=$IT_ROOT/build/app/uroce-xfer/uroce-xfer}"
: "${UROCE_CLI:=$IT_ROOT/build/app/uroce/uroce}"
# Idle poll lcores sleep this long: four busy processes share two cores here.
: "${IT_IDLE_SLEEP_US:=50}"
: "${IT_READY_TIMEOUT:=30}"
# IT_KEEP=1 (by hand): the run's folder, with the daemons' and programs' logs, is kept.

IT_PIDS=()
IT_NETNS=()
IT_PREFIXES=()
IT_USERS=()
IT_GROUPS=()
IT_FAILS=0

it_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# it_reap PID: waits up to 5 s for PID (already told to stop) to end, then SIGKILL.
it_reap() {
	local i
	for i in $(seq 1 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# it_stop_pids PID...: SIGTERM to each, then it_reap each (SIGKILL after 5 s).
it_stop_pids() {
	local pid
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		it_reap "$pid"
	done
}

it_cleanup() {
	local rc=$? ns p
	trap - EXIT INT TERM
	it_stop_pids "${IT_PIDS[@]}"
	for ns in "${IT_NETNS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	for p in "${IT_PREFIXES[@]}"; do
		rm -rf /dev/hugepages/"$p"* /var/run/dpdk/"$p" 2>/dev/null
	done
	it_users_remove
	if [ -n "${IT_DIR:-}" ] && [ -d "$IT_DIR" ]; then
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
			it_log "failed (exit $rc); daemon logs:"
			for f in "$IT_DIR"/*.log; do
				[ -f "$f" ] || continue
				echo "---- $f (last 40 lines)"
				tail -n 40 "$f"
			done
		fi
		[ -n "${IT_KEEP:-}" ] || rm -rf "$IT_DIR"
	fi
	exit "$rc"
}

# it_reap_stale: what earlier runs killed outright left behind. A SIGKILL skips every trap,
# and meson sends one half a second after its SIGTERM when a test times out or meson is
# interrupted, while a run's cleanup takes seconds. The namespaces of a run are named after
# its script's PID (ux<pid>a, uxe<pid>, ...); those whose script no longer runs are removed
# with whatever still runs in them, a daemon say. (A guest of test/vm and its namespace are
# ended by uvm's watchers when their owner dies; "uvm reap" is for what outlived those.)
it_reap_stale() {
	local ns pid p
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		[[ $ns =~ ^ux[a-z]?([0-9]+)[a-z]?$ ]] || continue
		pid=${BASH_REMATCH[1]}
		kill -0 "$pid" 2>/dev/null && continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null &&
			it_log "removed netns $ns (and what ran in it) of an earlier run that was killed"
	done
}

# it_init NAME: names unique to this run; exit 77 (skip) unless root and the binaries exist;
# removes what runs killed before left behind (it_reap_stale).
it_init() {
	IT_NAME=$1
	if [ "$(id -u)" -ne 0 ]; then
		echo "$IT_NAME: needs root (netns, af_packet, EAL); skipped"
		exit 77
	fi
	for b in "$UROCED" "$UROCE_XFER" "$UROCE_CLI"; do
		if [ ! -x "$b" ]; then
			echo "$IT_NAME: $b not built; skipped"
			exit 77
		fi
	done
	it_reap_stale
	# Only where a guest's folder is left: uvm is a Python start of a second or two.
	[ -n "$(ls -A "${UROCE_VM_WORK:-/tmp/uroce-vm}/run" 2>/dev/null)" ] && "$IT_ROOT/test/vm/uvm" reap
	IT_ID=$$
	IT_DIR=$(mktemp -d "/tmp/uroce-it-$IT_NAME.XXXXXX")
	trap it_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# it_need_built FILE...: exit 77 (skipped) unless each FILE of the build exists.
it_need_built() {
	local f
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			echo "$IT_NAME: $f not built; skipped"
			exit 77
		fi
	done
}

# it_need_tools PACKAGES TOOL...: exit 77 (skipped) unless each TOOL is installed, saying
# which Debian PACKAGES bring them.
it_need_tools() {
	local pkgs=$1 t
	shift
	for t in "$@"; do
		if ! command -v "$t" >/dev/null; then
			echo "$IT_NAME: $t not installed ($pkgs); skipped"
			exit 77
		fi
	done
}

# it_user NAME [USERADD_OPTION...]: a user of this run (no home, no login shell; -N: no
# group of its own, -G GROUP, --system -U, ... as useradd takes them); it_cleanup kills
# what still runs as it, after the daemons (which may run as it), then removes it.
# it_group NAME: a group of this run, removed likewise. Both skip (77) without the tools.
it_user() {
	local name=$1
	shift
	it_need_tools passwd useradd userdel
	useradd -M -s /usr/sbin/nologin "$@" "$name" || return 1
	IT_USERS+=("$name")
}
it_group() {
	it_need_tools passwd groupadd groupdel
	groupadd "$1" || return 1
	IT_GROUPS+=("$1")
}

# it_users_remove: it_cleanup's part: the run's users' processes killed (userdel refuses
# a user that still runs something), then the users and groups removed.
it_users_remove() {
	local u g i
	for u in "${IT_USERS[@]}"; do
		pkill -KILL -u "$u" 2>/dev/null
	done
	for u in "${IT_USERS[@]}"; do
		for i in $(seq 1 20); do
			pgrep -u "$u" >/dev/null || break
			sleep 0.1
		done
		userdel "$u" 2>/dev/null
	done
	for g in "${IT_GROUPS[@]}"; do
		groupdel "$g" 2>/dev/null
	done
}

# it_need_pyverbs MODULE: exit 77 (skipped) unless $PYTHON imports pyverbs' MODULE, the
# package as installed (whatever libibverbs the environment points at).
it_need_pyverbs() {
	if ! env -u LD_LIBRARY_PATH "$PYTHON" -c "import $1" 2>/dev/null; then
		echo "$IT_NAME: $PYTHON has no pyverbs (apt-get install python3-pyverbs); skipped"
		exit 77
	fi
}

# it_veth_pair MTU: netns ux<id>a and ux<id>b, veth ux<id>a / ux<id>b between them, up,
# no IP address and no IPv6 on them (the daemons own those interfaces).
it_veth_pair() {
	local mtu=${1:-1500}
	IT_NS_A=ux${IT_ID}a
	IT_NS_B=ux${IT_ID}b
	IT_IF_A=ux${IT_ID}a
	IT_IF_B=ux${IT_ID}b
	ip netns add "$IT_NS_A" || return 1
	IT_NETNS+=("$IT_NS_A")
	ip netns add "$IT_NS_B" || return 1
	IT_NETNS+=("$IT_NS_B")
	ip link add "$IT_IF_A" netns "$IT_NS_A" type veth peer name "$IT_IF_B" netns "$IT_NS_B" ||
		return 1
	local ns ifc
	for ns in "$IT_NS_A" "$IT_NS_B"; do
		ifc=$IT_IF_A
		[ "$ns" = "$IT_NS_B" ] && ifc=$IT_IF_B
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
		ip netns exec "$ns" sysctl -qw net.ipv6.conf."$ifc".disable_ipv6=1 2>/dev/null
		ip -n "$ns" link set "$ifc" mtu "$mtu" || return 1
		ip -n "$ns" link set "$ifc" up || return 1
		ip -n "$ns" link set lo up
	done
}

# The af_packet vdev for a veth end; jumbo MTUs need frames that fit one 9216-byte mbuf.
it_af_packet_vdev() {
	local ifc=$1 mtu=${2:-1500}
	if [ "$mtu" -gt 1500 ]; then
		echo "--vdev=net_af_packet0,iface=$ifc,blocksz=36864,framesz=9216,framecnt=512"
	else
		echo "--vdev=net_af_packet0,iface=$ifc"
	fi
}

# The memif vdevs: A is the server (it must listen first), B the client; bsize holds a
# whole 9000-byte frame (no chained descriptors, see doc/ethdev.md).
it_memif_vdev() {
	local role=$1
	echo "--vdev=net_memif0,role=$role,socket=$IT_DIR/memif.sock,socket-abstract=no,bsize=9216"
}

it_sock() { echo "$IT_DIR/uroce-$1.sock"; }

# it_kernel_iface_pair NET [VDEV_OPTS]: two hosts as the middleware meets them: a veth
# pair (MTU 1500), daemon A at NET.1 and B at NET.2 on af_packet (",framecnt=..." and the
# like in VDEV_OPTS), each with its kernel interface (host.kernel_iface=uroce0), so that a
# program's TCP address and its RDMA device's address are one, as on an RNIC.
it_kernel_iface_pair() {
	local net=$1 opts=${2:-}
	it_veth_pair 1500 || return 1
	it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)$opts" "$net.1" 1500 \
		--set host.kernel_iface=uroce0 || return 1
	it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)$opts" "$net.2" 1500 \
		--set host.kernel_iface=uroce0
}

# it_daemon NAME NETNS|"" VDEV IPV4 MTU [--set k=v ...]: starts uroced, waits for
# "uroced: ready". Its pid is in IT_PID_<NAME>, its log in $IT_DIR/NAME.log.
it_daemon() {
	local name=$1 ns=$2 vdev=$3 ip=$4 mtu=$5
	shift 5
	local prefix=ux${IT_ID}${name}
	local log=$IT_DIR/$name.log sock
	sock=$(it_sock "$name")
	local -a cmd=("$UROCED" --no-pci --no-huge -m 512 "--file-prefix=$prefix"
		--log-level=lib.eal:error "$vdev" --
		--set "host.ipv4=$ip" --set "control.socket=$sock" --set "port.mtu=$mtu"
		--set "lcore.idle_sleep_us=$IT_IDLE_SLEEP_US" --set log.level=info "$@")
	IT_PREFIXES+=("$prefix")
	# The log of an earlier daemon of this name must go before this one starts: the
	# redirection below happens in the child, after the fork, and the ready check that
	# follows could otherwise read the old daemon's "ready" and go on before this one
	# listens (two_hosts' MTU 9000 phase once failed so, under load: "cannot connect ...
	# No such file or directory").
	rm -f "$sock" "$log"
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "${cmd[@]}" >"$log" 2>&1 &
	else
		"${cmd[@]}" >"$log" 2>&1 &
	fi
	local pid=$!
	IT_PIDS+=("$pid")
	printf -v "IT_PID_$name" '%s' "$pid"
	it_wait_ready "$log" "$pid"
	case $? in
	1) it_log "uroced $name exited before ready:"; cat "$log"; return 1 ;;
	2) it_log "uroced $name not ready in ${IT_READY_TIMEOUT} s"; return 1 ;;
	esac
	it_log "uroced $name: $(grep -m1 '^uroced: ready' "$log")"
}

# it_wait_ready LOG PID: until LOG says "uroced: ready". 0: ready; 1: PID ended first;
# 2: not within IT_READY_TIMEOUT seconds.
it_wait_ready() {
	local t=0
	until grep -q '^uroced: ready' "$1" 2>/dev/null; do
		kill -0 "$2" 2>/dev/null || return 1
		t=$((t + 1))
		[ "$t" -gt $((IT_READY_TIMEOUT * 10)) ] && return 2
		sleep 0.1
	done
}

# it_stop_daemon NAME: SIGTERM, then SIGKILL after 5 s.
it_stop_daemon() {
	local v="IT_PID_$1"
	local pid=${!v:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	it_reap "$pid"
	printf -v "IT_PID_$1" '%s' ""
}

# it_memif_pair MTU IP_A IP_B: two daemons joined by memif (no netns needed).
it_memif_pair() {
	local mtu=$1 ipa=$2 ipb=$3
	shift 3
	it_daemon MA "" "$(it_memif_vdev server)" "$ipa" "$mtu" "$@" || return 1
	it_daemon MB "" "$(it_memif_vdev client)" "$ipb" "$mtu" "$@" || return 1
	it_wait_link_up MA MB
}

# it_wait_link_up NAME...: until each daemon's port is up (port.link_up 1), at most 20 s.
# A memif link comes up only after the two PMDs' handshake, which follows "ready": a
# transfer started before it loses its first frames (tx_link_down) and, when the
# handshake is slow (a loaded machine), spends its retries on a link that is not there.
it_wait_link_up() {
	local name end=$((SECONDS + 20))
	for name in "$@"; do
		until [ "$(it_stat "$(it_sock "$name")" port.link_up)" = 1 ]; do
			if [ "$SECONDS" -ge "$end" ]; then
				echo "$name: its port is not up after 20 s" >&2
				return 1
			fi
			sleep 0.05
		done
	done
}

# it_xfer_pair LABEL TIMEOUT SERVER_SOCK CLIENT_SOCK PORT ARGS...: runs
# `uroce-xfer ops` as server on one daemon and client on the other (client to
# 127.0.0.1); both must exit 0. The client's summary is printed.
it_xfer_pair() {
	local label=$1 tmo=$2 ssock=$3 csock=$4 port=$5
	shift 5
	local slog=$IT_DIR/xfer-$label-server.out clog=$IT_DIR/xfer-$label-client.out
	local t0=$SECONDS rs rc
	timeout -k 5 "$tmo" "$UROCE_XFER" -S "$ssock" "$@" -p "$port" >"$slog" 2>&1 &
	local spid=$!
	timeout -k 5 "$tmo" "$UROCE_XFER" -S "$csock" "$@" -p "$port" 127.0.0.1 >"$clog" 2>&1
	rc=$?
	wait "$spid"
	rs=$?
	if [ "$rc" -eq 0 ] && [ "$rs" -eq 0 ]; then
		it_log "PASS $label ($((SECONDS - t0)) s)"
		grep -v '^  ' "$clog" | sed 's/^/    /'
		return 0
	fi
	it_log "FAIL $label: client exit $rc, server exit $rs ($((SECONDS - t0)) s)"
	echo "---- client"
	tail -n 40 "$clog"
	echo "---- server"
	tail -n 40 "$slog"
	IT_FAILS=$((IT_FAILS + 1))
	return 1
}

# it_check WHAT CMD...: runs CMD; logs "ok: WHAT" or "FAILED: WHAT", a failure counting in
# IT_FAILS.
it_check() {
	local what=$1
	shift
	if "$@"; then
		it_log "ok: $what"
	else
		it_log "FAILED: $what"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}

# it_stat SOCK NAME: one counter's value from `uroce stat --json` ("" if absent).
it_stat() {
	"$UROCE_CLI" -S "$1" stat --json 2>/dev/null |
		sed -n "s/^ *\"$2\": \([0-9]*\).*/\1/p"
}

# it_stats_prefix SOCK PREFIX: "name value" lines of counters starting with PREFIX.
it_stats_prefix() {
	"$UROCE_CLI" -S "$1" stat 2>/dev/null | awk -v p="$2" 'index($1, p) == 1 { print $1, $2 }'
}

# it_show FILE: FILE's lines matching $FILTER (all when FILTER is empty), indented: what a
# passing case prints of a tool's output.
it_show() {
	if [ -n "${FILTER:-}" ]; then
		grep -E "$FILTER" "$1" | sed 's/^/    /'
	else
		sed 's/^/    /' "$1"
	fi
}

# it_wait_listen PORT PID SECONDS [NETNS]: until a TCP socket of this namespace (or of
# NETNS) listens on PORT, PID has exited, or SECONDS have passed. A tool's server sets
# its devices up before it listens (ibv_srq_pingpong makes 17 QPs through the daemon
# first): a fixed sleep before starting the client lost that race on a loaded machine
# ("Couldn't connect to 127.0.0.1:PORT", the server then waiting out its timeout).
it_wait_listen() {
	it_wait_until "$2" "$3" it_tcp_listening "$1" "${4:-}"
}

# it_tcp_listening PORT [NETNS]: a TCP socket of this namespace (or NETNS) listens on PORT.
it_tcp_listening() {
	local -a in_ns=()
	[ -n "${2:-}" ] && in_ns=(ip netns exec "$2")
	[ -n "$("${in_ns[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# it_wait_until PID SECONDS CMD...: 0 once CMD succeeds, 1 if PID exits first or SECONDS
# pass. The one loop the waits for a program's readiness below share.
it_wait_until() {
	local pid=$1 end=$((SECONDS + $2))
	shift 2
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# it_wait_line FILE REGEX PID SECONDS: 0 once FILE has a line matching REGEX (extended),
# 1 if PID exits first or SECONDS pass: a program that says when it is ready.
it_wait_line() {
	it_wait_until "$3" "$4" grep -Eqs "$2" "$1"
}

# it_wait_cm_listening SOCK BEFORE PID SECONDS: 0 once the daemon at SOCK has more
# listening rdma_cm ids than BEFORE (cm.listening), 1 if PID exits first or SECONDS pass.
# rdma_cm listens in the daemon, not in the kernel: ss cannot tell.
it_wait_cm_listening() {
	it_wait_until "$3" "$4" it_cm_listening_above "$1" "$2"
}

it_cm_listening_above() {
	[ "$(it_stat "$1" cm.listening)" -gt "$2" ]
}

# it_tool_pair "SERVER PREFIX" "CLIENT PREFIX" LABEL TIMEOUT CMD ARGS...: CMD ARGS -p $PORT
# as a server (run through SERVER PREFIX, e.g. "on A"), then as a client to 127.0.0.1
# (through CLIENT PREFIX); both must exit 0. Skipped unless LABEL matches $TOOLS_ONLY.
# The client's output is printed (it_show). A failure counts in IT_FAILS.
it_tool_pair() {
	local -a sp cp
	read -r -a sp <<<"$1"
	read -r -a cp <<<"$2"
	local label=$3 tmo=$4
	shift 4
	[ -z "${TOOLS_ONLY:-}" ] || [[ $label =~ $TOOLS_ONLY ]] || return 0
	PORT=$((PORT + 1))
	local slog=$IT_DIR/server.out clog=$IT_DIR/client.out t0=$SECONDS rs rc spid
	"${sp[@]}" timeout -k 5 "$tmo" "$@" -p "$PORT" >"$slog" 2>&1 &
	spid=$!
	it_wait_listen "$PORT" "$spid" "$tmo"
	"${cp[@]}" timeout -k 5 "$tmo" "$@" -p "$PORT" 127.0.0.1 >"$clog" 2>&1
	rc=$?
	wait "$spid"
	rs=$?
	if [ "$rc" -eq 0 ] && [ "$rs" -eq 0 ]; then
		it_log "PASS $label ($((SECONDS - t0)) s): $*"
		it_show "$clog"
		return 0
	fi
	it_log "FAIL $label: client exit $rc, server exit $rs ($((SECONDS - t0)) s): $*"
	echo "---- client"
	tail -n 30 "$clog"
	echo "---- server"
	tail -n 30 "$slog"
	IT_FAILS=$((IT_FAILS + 1))
	return 1
}

# ---- the Linux rxe guest (test/vm) as a peer -----------------------------------------------
# UVM: the harness's command (test/vm/README.md); UROCE_VM_WORK its image and run files.
UVM=$IT_ROOT/test/vm/uvm
export UROCE_VM_WORK=${UROCE_VM_WORK:-/tmp/uroce-vm}
# it_rxe_vm_require: after it_init, exit 77 (skipped) without QEMU or the guest's image,
# unless UROCE_VM_REQUIRED=1 (the test command: there a missing guest is a failure). With
# UROCE_VM_BUILD=1 a missing image is built first (test/vm/image.sh, minutes).
it_rxe_vm_require() {
	local why=
	if ! command -v qemu-system-x86_64 >/dev/null; then
		why="qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
	elif [ ! -f "$UROCE_VM_WORK/image/initrd.cpio" ]; then
		if [ "${UROCE_VM_BUILD:-0}" = 1 ]; then
			it_log "building the guest image (test/vm/image.sh, minutes)"
			"$IT_ROOT/test/vm/image.sh" >"$IT_DIR/image.log" 2>&1 || {
				tail -n 20 "$IT_DIR/image.log"
				exit 1
			}
		else
			why="no guest image in $UROCE_VM_WORK (run test/vm/image.sh, or UROCE_VM_BUILD=1)"
		fi
	fi
	[ -z "$why" ] && return 0
	if [ "${UROCE_VM_REQUIRED:-0}" = 1 ]; then
		echo "$IT_NAME: $why (UROCE_VM_REQUIRED=1)"
		exit 1
	fi
	echo "$IT_NAME: $why; skipped"
	exit 77
}
# it_rxe_vm_names NS VM: the names of this run's namespace and guest (each script its own,
# so that a run never meets another's) and the one topology of every rxe test: the guest
# at VM_IP on bridge rxebr0 (BR_IP) in NS, a uroced at OUR_IP on veth rxeveth0 there.
# VM_BOOT_TIMEOUT defaults to 240 s.
it_rxe_vm_names() {
	NS=$1
	VM=$2
	VM_IP=198.18.0.1
	OUR_IP=198.18.0.100
	BR_IP=198.18.0.254
	: "${VM_BOOT_TIMEOUT:=240}"
}
# vmx OP ARGS...: uvm's OP on this run's guest (exec, spawn, wait, kill, put, get).
vmx() { "$UVM" "$1" "$VM" "${@:2}"; }
# it_rxe_vm_down: stop the guest and remove the namespace, keeping the guest's console in
# $IT_DIR/console.log. (Were the script killed instead, uvm's watchers would do both.)
it_rxe_vm_down() {
	"$UVM" stop "$VM" >/dev/null 2>&1
	cp "$UROCE_VM_WORK/console/$VM.log" "$IT_DIR/console.log" 2>/dev/null
	"$UVM" net down "$NS" >/dev/null 2>&1
}
# it_rxe_vm_up [SHARE]: the private netns $NS with bridge rxebr0 ($BR_IP), tap rxetap0 and
# veth rxeveth0, then guest $VM booted on the tap as $VM_IP (at most $VM_BOOT_TIMEOUT s),
# with folder SHARE mounted at /host in it if given (a binary built here, to run there).
# Both belong to this script: they end with it, even killed. Sets the EXIT trap that stops
# daemon R, the guest and the netns, then it_cleanup.
it_rxe_vm_up() {
	local share=()

	[ -n "${1:-}" ] && share=(--share "$1")
	trap 'rc=$?; it_stop_daemon R; it_rxe_vm_down; (exit $rc); it_cleanup' EXIT
	it_log "network: netns $NS, bridge rxebr0 ($BR_IP), tap rxetap0, veth rxeveth0"
	"$UVM" net up "$NS" --taps 1 --veth --owner $$ || return 1
	ip -n "$NS" addr add "$BR_IP/24" dev rxebr0 || return 1
	it_log "booting guest $VM"
	if ! "$UVM" boot "$VM" --ns "$NS" --tap rxetap0 --ip "$VM_IP/24" --owner $$ \
		--wait "$VM_BOOT_TIMEOUT" "${share[@]}" >"$IT_DIR/vm.log" 2>&1; then
		it_log "the guest did not come up:"
		tail -n 30 "$IT_DIR/vm.log"
		return 1
	fi
	it_log "$(cat "$IT_DIR/vm.log")"
}
