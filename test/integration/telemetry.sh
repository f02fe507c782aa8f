#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The daemon's counters reach monitoring systems as any DPDK application's do, and as
# Prometheus text: one daemon on a net_null port, an ibv_rc_pingpong server (run with
# uroce exec) as the load whose objects the counters must show:
#   - DPDK's telemetry socket: dpdk-telemetry.py (Debian's dpdk-dev) and a client of the
#     socket's own protocol read /uroce/info and /uroce/stats; objects.qp there follows
#     `uroce stat` (1 with the program, 0 after it ended, within the 100 ms snapshot);
#     every counter of `uroce stat` is in some group;
#   - Prometheus (telemetry.prometheus_listen): GET /metrics is 200 and text in the
#     exposition format, one metric per counter of `uroce stat`, uroce_objects_qp
#     following it; another path 404; a connection that says nothing holds no scrape back
#     and is closed after 2 s; daemon.prometheus_scrapes counts the answers;
#   - telemetry.dpdk = no: no telemetry socket; a bad listen address: the daemon does
#     not start, and says why in one line.
#   telemetry.sh   (root; $UROCED, $UROCE_CLI from meson)
# Exit: 0 passed, 1 failed, 77 not root, no ibverbs-utils or python3, not built.
set -uo pipefail
unset LD_LIBRARY_PATH
. "$(dirname "$0")/lib.sh"
it_init telemetry
it_need_tools ibverbs-utils ibv_rc_pingpong
it_need_tools python3 python3

port=$((30000 + IT_ID % 20000))
it_daemon T "" "--vdev=net_null0,no-rx=1" 10.84.0.1 1500 \
	--set "telemetry.prometheus_listen=127.0.0.1:$port" || exit 1
sock=$(it_sock T)
prefix=ux${IT_ID}T
tsock=/var/run/dpdk/$prefix/dpdk_telemetry.v2

# tel CMD: the JSON DPDK's telemetry socket answers (its protocol: a hello, then a reply
# per command on a SOCK_SEQPACKET socket).
tel() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1]); s.recv(16384); s.send(sys.argv[2].encode())
print(s.recv(1 << 20).decode())' "$tsock" "$1"
}
# field JSON_FILE PATH...: the value at the path of keys.
field() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v = v[k]
print(v)' "$@"
}
stat_of() { it_stat "$sock" "$1"; }
metrics() { python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=5).read().decode(), end="")' "$port" "${1:-/metrics}"; }
metric() { metrics | sed -n "s/^$1 \([0-9]*\)$/\1/p"; }

it_check "the telemetry socket is there ($tsock)" test -S "$tsock"
tel /uroce/info >"$IT_DIR/info.json"
it_check "/uroce/info: the port and the control socket" eval \
	'[ "$(field "$IT_DIR/info.json" /uroce/info port)" = net_null0 ] &&
	[ "$(field "$IT_DIR/info.json" /uroce/info socket)" = "$sock" ]'

"$UROCE_CLI" -S "$sock" exec -- ibv_rc_pingpong -g 1 -p "$((port + 1))" >"$IT_DIR/pp.log" 2>&1 &
pp=$!
IT_PIDS+=("$pp")
for t in $(seq 100); do [ "$(stat_of objects.qp)" = 1 ] && break; sleep 0.1; done
it_check "uroce stat: the program's QP (objects.qp 1)" [ "$(stat_of objects.qp)" = 1 ]
sleep 0.3 # the telemetry snapshot is at most 100 ms old
tel /uroce/stats >"$IT_DIR/stats.json"
it_check "/uroce/stats: objects.qp 1, as uroce stat" \
	[ "$(field "$IT_DIR/stats.json" /uroce/stats objects qp)" = 1 ]
"$UROCE_CLI" -S "$sock" stat --json >"$IT_DIR/stat.json"
it_check "/uroce/stats has every counter of uroce stat" python3 -c 'import json, sys
tel = json.load(open(sys.argv[1]))["/uroce/stats"]
have = {(g if g != "transport" else "") + "." + k for g, d in tel.items() for k in d}
split = [n.split(".", 1) for n in json.load(open(sys.argv[2]))]
want = {"." + s[0] if len(s) == 1 else s[0] + "." + s[1].replace(".", "_") for s in split}
missing = want - have
assert not missing, sorted(missing)' "$IT_DIR/stats.json" "$IT_DIR/stat.json"
if command -v dpdk-telemetry.py >/dev/null; then
	echo /uroce/stats | dpdk-telemetry.py -f "$prefix" >"$IT_DIR/dt.json" 2>"$IT_DIR/dt.err"
	it_check "dpdk-telemetry.py -f $prefix: /uroce/stats, objects.qp 1" \
		[ "$(field "$IT_DIR/dt.json" /uroce/stats objects qp)" = 1 ]
else
	it_log "dpdk-telemetry.py not installed (Debian's dpdk-dev): that client not run"
fi

metrics >"$IT_DIR/metrics.txt"
it_check "GET /metrics: uroce_objects_qp 1" grep -qx "uroce_objects_qp 1" "$IT_DIR/metrics.txt"
it_check "GET /metrics: every line a TYPE comment or 'uroce_NAME VALUE'" \
	eval '! grep -Evx "# TYPE uroce_[a-zA-Z0-9_]+ untyped|uroce_[a-zA-Z0-9_]+ [0-9]+" "$IT_DIR/metrics.txt"'
it_check "GET /metrics: a metric for each counter of uroce stat ($(grep -c '^uroce_' "$IT_DIR/metrics.txt"))" \
	[ "$(grep -c '^uroce_' "$IT_DIR/metrics.txt")" -eq "$(python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))))' "$IT_DIR/stat.json")" ]
metrics /nope >/dev/null 2>&1
it_check "GET /nope: an HTTP error" [ $? -ne 0 ]
# A silent connection must not hold a scrape back, and goes after 2 s.
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t = time.monotonic(); d = s.recv(1); print("%.1f %d" % (time.monotonic() - t, len(d)))' "$port" \
	>"$IT_DIR/silent.out" &
silent=$!
sleep 0.2
it_check "a scrape beside a silent connection" eval 'metrics | grep -q "^uroce_objects_qp "'
wait "$silent"
it_check "the silent connection closed after ~2 s ($(cat "$IT_DIR/silent.out"))" \
	awk '$1 >= 1.5 && $1 < 4 && $2 == 0 { ok = 1 } END { exit !ok }' "$IT_DIR/silent.out"

kill "$pp" 2>/dev/null
wait "$pp" 2>/dev/null
for t in $(seq 100); do [ "$(stat_of objects.qp)" = 0 ] && break; sleep 0.1; done
sleep 0.3
tel /uroce/stats >"$IT_DIR/stats2.json"
it_check "after the program ended: objects.qp 0 in /uroce/stats and /metrics" eval \
	'[ "$(field "$IT_DIR/stats2.json" /uroce/stats objects qp)" = 0 ] &&
	[ "$(metric uroce_objects_qp)" = 0 ]'
it_check "daemon.prometheus_scrapes counted the 3 answers ($(stat_of daemon.prometheus_scrapes))" \
	[ "$(stat_of daemon.prometheus_scrapes)" -eq 3 ]
it_stop_daemon T

it_daemon N "" "--vdev=net_null0,no-rx=1" 10.84.0.2 1500 --set telemetry.dpdk=no || exit 1
it_check "telemetry.dpdk = no: no telemetry socket" test ! -e "/var/run/dpdk/ux${IT_ID}N/dpdk_telemetry.v2"
it_stop_daemon N
timeout 30 "$UROCED" --no-pci --no-huge -m 512 "--file-prefix=ux${IT_ID}B" --vdev=net_null0 -- \
	--set "control.socket=$IT_DIR/b.sock" --set telemetry.prometheus_listen=localhost:x \
	>"$IT_DIR/bad.log" 2>&1
rc=$?
IT_PREFIXES+=("ux${IT_ID}B")
it_check "a bad prometheus_listen: exit $rc, and the line says what it wants" eval \
	'[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "telemetry.prometheus_listen localhost:x: not IPV4-ADDRESS:PORT" "$IT_DIR/bad.log"'

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "telemetry: all checks passed"
exit 0
