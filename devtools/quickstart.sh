#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The README's two commands, and what .ci/run calls:
#   devtools/quickstart.sh demo   install what is missing, build, run the demo
#   devtools/quickstart.sh test   install what is missing, build, run every test:
#                                 unit and capture tests, the same under ASan/UBSan,
#                                 a bounded fuzzing run, and the benchmarks in quick mode
# Run as root on Debian 12 from anywhere inside the checkout. The Linux rxe captures the
# tests need are read from $UROCE_PCAP_DIR (default: test/data/rxe-captures).
#
# Environment: FUZZ_SECONDS (default 150, shared by the fuzz targets), UROCE_PCAP_DIR.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export UROCE_PCAP_DIR=${UROCE_PCAP_DIR:-$top/test/data/rxe-captures}

# Everything comes from Debian 12's archive; doc/dependencies.md says why each is here.
packages=(
	gcc libc6-dev pkg-config meson ninja-build python3
	libdpdk-dev libisal-dev libibverbs-dev librdmacm-dev libcriterion-dev dpdk-dev
	tshark
	clang libclang-rt-dev
	iproute2 iputils-ping procps systemd man-db debhelper debootstrap gnuplot-nox
	ibverbs-utils perftest rdmacm-utils python3-pyverbs
)

# For the interop tests against Linux rxe in a QEMU guest (test/vm: kernel 6.1 rdma_rxe,
# rdma-core 44, built from Debian's packages by test/vm/image.sh): the test command
# installs them and builds the image, and a missing guest fails the run.
rxe_vm_packages=(qemu-system-x86 debootstrap cpio kmod)
# The middleware of test/eco (suite "eco"), run unmodified over uroce: installed by the
# test command too; a case whose package cannot be had is skipped.
eco_packages=(ucx-utils openmpi-bin libopenmpi-dev mpich libmpich-dev qperf
	libfabric-dev libfabric-bin sockperf ceph-mon ceph-osd ceph-common)

# lintian, for the Debian package's test (a check it reports; skipped without it).
package_packages=(lintian)

say() { printf '\n==> %s\n' "$*"; }

# install_missing PACKAGE...: install those not installed yet; exit if that fails.
install_missing() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		say "all $# packages already installed"
		return
	fi
	say "installing: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "quickstart: installing packages needs root (run as root or with sudo)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# install_optional PACKAGE...: like install_missing, but a failure is reported, not fatal.
install_optional() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || return 1
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
		>/dev/null 2>&1
}

check_pcaps() {
	if ! ls "$UROCE_PCAP_DIR"/*.pcap >/dev/null 2>&1; then
		echo "quickstart: no captures in $UROCE_PCAP_DIR (set UROCE_PCAP_DIR)" >&2
		exit 1
	fi
}

# build DIR [meson options...]: configure once, then (re)build.
build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
			cat "$dir.setup.log" >&2
			exit 1
		}
	fi
	ninja -C "$dir" >/dev/null
}

demo() {
	install_missing "${packages[@]}"
	check_pcaps
	say "building"
	build build
	say "two hosts (network namespaces joined by a veth pair), a uroced on each, RoCEv2 between them"
	bash devtools/demo_two_hosts.sh "$top/build"
	say "and lib/wire reading what Linux rxe sends (one RDMA READ, 4 KiB at MTU 1024):"
	build/app/uroce-pcap/uroce-pcap -v "$UROCE_PCAP_DIR/rdma_read.pcap" | sed -n 1,8p
}

# Runs one meson test session and appends its log to the summary.
run_suite() {
	local dir=$1
	shift
	meson test -C "$dir" --print-errorlogs "$@" || failed=1
	logs+=("$dir/meson-logs/testlog.json")
}

# check_tree LABEL COMMAND...: run a check of the tree; a failure is remembered in test_all's
# failed and format_failed and in the summary's logs.
check_tree() {
	local label=$1
	shift
	say "$label"
	if ! "$@"; then
		say "$label: failed"
		format_failed=1
		failed=1
		logs+=("failed:$label")
	fi
}

test_all() {
	local failed=0 format_failed=0 fuzz_seconds=${FUZZ_SECONDS:-150}
	logs=()
	install_missing "${packages[@]}"
	check_pcaps

	# Checks of the tree: each failure fails the run, after the builds and tests have
	# still said what they have to say. Whitespace and line length (.editorconfig):
	check_tree "format check (devtools/check_format.sh)" bash devtools/check_format.sh
	check_tree "paths outside the checkout (devtools/check_paths.sh)" bash devtools/check_paths.sh
	check_tree "commit messages (devtools/check_commits.sh)" bash devtools/check_commits.sh

	# Every rxe suite boots Linux rxe in test/vm's guest. Its image is built here: from
	# nothing about 5 min (debootstrap), then a repack of seconds when test/vm changed.
	install_missing "${rxe_vm_packages[@]}"
	say "the Linux rxe guest's image (test/vm/image.sh; log in build/vm-image.log)"
	mkdir -p build
	if ! bash test/vm/image.sh >build/vm-image.log 2>&1; then
		tail -n 20 build/vm-image.log
		say "the guest's image could not be built: the rxe suites will fail"
	fi
	export UROCE_VM_REQUIRED=1
	install_optional "${eco_packages[@]}" ||
		say "middleware packages unavailable: their eco tests will be skipped"
	install_optional "${package_packages[@]}" ||
		say "lintian unavailable: the package test will not run it"

	say "build (release) and tests (the integration suite runs here, as root)"
	build build
	run_suite build

	say "build with AddressSanitizer and UndefinedBehaviorSanitizer, and tests"
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	run_suite build-asan

	say "fuzzing the packet parser, the transport rx path, the host stack, the daemon control path and the CM, ${fuzz_seconds}s in all (libFuzzer, ASan/UBSan)"
	bash test/fuzz/run.sh "$fuzz_seconds" || { failed=1; logs+=("failed:fuzzing (test/fuzz/run.sh)"); }

	say "benchmarks, quick mode (figures only; targets are judged in doc/benchmarks.md)"
	meson test -C build --benchmark --verbose --logbase benchmarklog || failed=1
	logs+=("build/meson-logs/benchmarklog.json")

	python3 devtools/test_summary.py "${logs[@]}" || failed=1
	[ "$format_failed" = 0 ] ||
		say "format, path or commit check failed: devtools/check_format.sh, check_paths.sh and check_commits.sh list what"
	return $failed
}

case "${1:-}" in
demo) demo ;;
test) test_all ;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
