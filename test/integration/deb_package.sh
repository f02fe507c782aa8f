#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package, as an admin meets it on a fresh Debian 12: devtools/build_deb.sh
# builds it from HEAD, a minimal bookworm chroot (debootstrap, cached in
# /var/cache/uroce-test) installs it with apt from Debian's archive, and then:
#   - the files are where the package says (sbin/uroced, /etc/uroce/uroced.conf as a
#     conffile, the unit in /lib/systemd/system, the system user uroce it runs as and
#     /run/uroce given to it by tmpfiles.d, the drop-in libraries in
#     /usr/lib/<triplet>/uroce and not in the linker's path, the man pages);
#   - uroced runs in the chroot (a net_null port) and `uroce exec ibv_devinfo` there
#     shows uroce0, while the system's ibv_devinfo without uroce exec shows no uroce0;
#   - dpkg --purge removes every file it installed.
# lintian, when installed, must report no error.
#   deb_package.sh   (root; network to Debian's archive; about 4 minutes)
# Exit: 0 passed, 1 failed, 77 not root, no debootstrap/dpkg-buildpackage/debhelper,
# or no network to the archive.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
it_init deb_package
it_need_tools "debootstrap" debootstrap
it_need_tools "dpkg-dev debhelper" dpkg-buildpackage dh
: "${DEB_MIRROR:=http://deb.debian.org/debian}"
cache=/var/cache/uroce-test
tarball=$cache/bookworm-minbase.tar
root=$IT_DIR/chroot
mounted=()
chroot_cleanup() {
	local m p
	# Whatever still runs in the chroot (a daemon of a failed step) goes first: it would
	# otherwise outlive the test, and load the machine for every test after it.
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	for ((m = ${#mounted[@]} - 1; m >= 0; m--)); do
		umount -l "${mounted[m]}" 2>/dev/null
	done
}
# it_cleanup reads the exit status: it must still be the script's.
trap 'rc=$?; chroot_cleanup; (exit $rc); it_cleanup' EXIT

it_log "building the package (devtools/build_deb.sh)"
deb=$(bash "$IT_ROOT/devtools/build_deb.sh" "$IT_DIR/deb") || exit 1
it_log "built $deb ($(du -k "$deb" | cut -f1) KiB)"
if command -v lintian >/dev/null; then
	lintian --tag-display-limit 0 "$deb" >"$IT_DIR/lintian.out" 2>&1
	cat "$IT_DIR/lintian.out"
	it_check "lintian: no error" eval '! grep -q "^E:" "$IT_DIR/lintian.out"'
else
	it_log "lintian not installed: not run"
fi

# ---- a fresh Debian 12 -----------------------------------------------------------------
mkdir -p "$root"
if [ -s "$tarball" ]; then
	tar -C "$root" -xf "$tarball" || exit 1
	it_log "chroot from $tarball"
else
	it_log "debootstrap --variant=minbase bookworm ($DEB_MIRROR)"
	if ! debootstrap --variant=minbase bookworm "$root" "$DEB_MIRROR" >"$IT_DIR/debootstrap.log" 2>&1; then
		tail -n 5 "$IT_DIR/debootstrap.log"
		echo "deb_package: debootstrap failed (no network to $DEB_MIRROR?); skipped"
		exit 77
	fi
	mkdir -p "$cache" && tar -C "$root" -cf "$tarball.new" . && mv "$tarball.new" "$tarball"
fi
for m in proc sys dev; do
	mount --bind "/$m" "$root/$m" && mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

cp "$deb" "$root/tmp/"
name=$(basename "$deb")
in_root apt-get update -qq >"$IT_DIR/apt.log" 2>&1
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"/tmp/$name" ibverbs-utils >>"$IT_DIR/apt.log" 2>&1
rc=$?
it_check "apt-get install the package and ibverbs-utils in the chroot (exit $rc)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { tail -n 20 "$IT_DIR/apt.log"; exit 1; }

# ---- where things are --------------------------------------------------------------------
triplet=$(in_root dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
in_root dpkg -L uroce >"$IT_DIR/files"
for f in /usr/sbin/uroced /usr/bin/uroce /etc/uroce/uroced.conf \
	/lib/systemd/system/uroced@.service "/usr/lib/$triplet/uroce/libibverbs.so.1" \
	"/usr/lib/$triplet/uroce/librdmacm.so.1" /usr/share/man/man8/uroced.8.gz \
	/usr/share/man/man8/uroce.8.gz /usr/share/man/man5/uroced.conf.5.gz \
	"/usr/lib/$triplet/pkgconfig/uroce-client.pc"; do
	it_check "installed: $f" eval 'grep -qx "$f" "$IT_DIR/files" && [ -e "$root$f" ]'
done
it_check "the package made the system user uroce the unit's daemons become" \
	eval 'in_root getent passwd uroce | grep -q ":/usr/sbin/nologin$" &&
	grep -q "^Environment=\"UROCED_USER=uroce\"" "$root/lib/systemd/system/uroced@.service"'
it_check "tmpfiles.d gives /run/uroce to uroce" \
	grep -q '^d /run/uroce 0755 uroce uroce' "$root/usr/lib/tmpfiles.d/uroce.conf"
it_check "/etc/uroce/uroced.conf is a conffile" \
	eval 'in_root dpkg-query -W -f="\${Conffiles}" uroce | grep -q /etc/uroce/uroced.conf'
it_check "no library of the package in the linker's path" \
	eval '! in_root ldconfig -p | grep -q "/uroce/"'

# ---- it runs ------------------------------------------------------------------------------
prefix=ux${IT_ID}deb
IT_PREFIXES+=("$prefix")
# chroot itself, not in_root: a function in the background is a subshell, and $! would
# be the subshell's pid, not the daemon's (an earlier version left its daemons running).
chroot "$root" env -i PATH=/usr/sbin:/usr/bin /usr/sbin/uroced --no-pci --no-huge -m 512 \
	"--file-prefix=$prefix" --vdev=net_null0 -- --set host.ipv4=10.83.0.1 \
	>"$IT_DIR/D.log" 2>&1 &
dpid=$!
IT_PIDS+=("$dpid")
it_wait_ready "$IT_DIR/D.log" "$dpid"
it_check "uroced starts in the chroot" grep -q '^uroced: ready' "$IT_DIR/D.log" ||
	tail -n 20 "$IT_DIR/D.log"
in_root ibv_devinfo >"$IT_DIR/system.out" 2>&1
it_check "the system's ibv_devinfo shows no uroce0" eval '! grep -q uroce0 "$IT_DIR/system.out"'
in_root uroce exec ibv_devinfo >"$IT_DIR/exec.out" 2>&1
cat "$IT_DIR/exec.out"
it_check "uroce exec ibv_devinfo shows uroce0, its port active" \
	eval 'grep -q "hca_id:[[:space:]]*uroce0" "$IT_DIR/exec.out" &&
	grep -q "state:[[:space:]]*PORT_ACTIVE" "$IT_DIR/exec.out"'
kill -TERM "$dpid"
it_reap "$dpid"
it_check "SIGTERM stopped it: nothing of the package still runs" \
	eval '! ps -eo args | grep -q "^/usr/sbin/uroced .*--file-prefix=$prefix"'


# ---- and goes ------------------------------------------------------------------------------
in_root dpkg --purge uroce >"$IT_DIR/purge.log" 2>&1
it_check "dpkg --purge uroce (exit $?)" [ $? -eq 0 ]
left=
while read -r f; do
	[ -d "$root$f" ] || [ ! -e "$root$f" ] || left="$left $f"
done <"$IT_DIR/files"
it_check "purge left none of its files${left:+:$left}" [ -z "$left" ]
it_check "purge removed /etc/uroce" test ! -e "$root/etc/uroce"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "deb_package: all checks passed"
exit 0
