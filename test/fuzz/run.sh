#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the lib/wire parser fuzz target for a bounded time (default 60 s):
#   test/fuzz/run.sh [SECONDS]
# Configures build-fuzz (clang, ASan+UBSan, fuzz=true) if needed, builds the target and
# uroce-pcap, turns the pcaps into a seed corpus, fuzzes, and exits non-zero on a crash.
# Env: UROCE_PCAP_DIR (default ../shared/pcaps, relative to the repo root).
set -euo pipefail

cd "$(dirname "$0")/../.."

secs=${1:-60}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [SECONDS]  (a positive integer, default 60)" >&2
	exit 2
fi

build=build-fuzz
pcap_dir=${UROCE_PCAP_DIR:-../shared/pcaps}
seeds=$build/fuzz-seeds
corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
log=$build/fuzz_wire_parse.log
fuzzer=$build/test/fuzz/fuzz_wire_parse

if [[ ! -f $build/build.ninja ]]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized
fi
# Only what this script runs, so that a half-edited target elsewhere does not stop it.
ninja -C "$build" test/fuzz/fuzz_wire_parse app/uroce-pcap/uroce-pcap

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1

# Seeds: every RoCEv2 frame of the captures that parses, verifies and rebuilds exactly.
shopt -s nullglob
pcaps=("$pcap_dir"/*.pcap)
shopt -u nullglob
if ((${#pcaps[@]} == 0)); then
	echo "$0: no pcaps in $pcap_dir (set UROCE_PCAP_DIR)" >&2
	exit 1
fi
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
# Each captured frame, and (-t) its IPv6, 802.1Q, UDP-checksum and CNP variants written by
# lib/wire's builder: rxe's captures are all untagged IPv4, and libFuzzer does not find
# its way from there to a valid IPv6 frame on its own.
if ! "$build/app/uroce-pcap/uroce-pcap" -x "$seeds" -t "${pcaps[@]}" >"$build/fuzz-seeds.log"; then
	echo "$0: uroce-pcap failed on the captures (see $build/fuzz-seeds.log)" >&2
	exit 1
fi
nseeds=$(find "$seeds" -type f | wc -l)
if ((nseeds == 0)); then
	echo "$0: uroce-pcap wrote no seeds into $seeds" >&2
	exit 1
fi
echo "fuzz_wire_parse: $nseeds seeds from ${#pcaps[@]} pcaps, fuzzing for $secs s"

# New inputs go to the first directory (the working corpus, kept between runs); crash,
# timeout and leak files to $artifacts.
rc=0
"$fuzzer" -max_total_time="$secs" -max_len=9100 -timeout=10 \
	-artifact_prefix="$artifacts/" "$corpus" "$seeds" 2>&1 | tee "$log" || rc=$?
if ((rc != 0)); then
	echo "fuzz_wire_parse: FAILED (exit $rc); log: $log; inputs: $artifacts/" >&2
	echo "fuzz_wire_parse: replay one with: $fuzzer $artifacts/crash-<sha1>" >&2
	exit "$rc"
fi

done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
if [[ -z $done_line ]]; then
	echo "fuzz_wire_parse: no 'Done N runs' line from libFuzzer; log: $log" >&2
	exit 1
fi
runs=$(awk '{print $2}' <<<"$done_line")
took=$(awk '{print $5}' <<<"$done_line")
status=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
cov=$(grep -oE 'cov: [0-9]+' <<<"$status" | awk '{print $2}' || true)
ft=$(grep -oE 'ft: [0-9]+' <<<"$status" | awk '{print $2}' || true)
corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$status" | awk '{print $2}' || true)
echo "fuzz_wire_parse: cov ${cov:-?} ft ${ft:-?} corpus ${corp:-?} (last status line)"
echo "fuzz_wire_parse: $runs runs in $took s, no crash"
