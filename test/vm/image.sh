#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# image.sh: build the Linux rxe guest every rxe suite boots (test/vm/README.md).
#
#   test/vm/image.sh [--clean]      root; Debian 12 host with debootstrap
#
# Everything comes from the Debian 12 archive the host's apt is configured with: a minbase
# bookworm tree (debootstrap) with rdma-core, perftest, pyverbs, UCX, libfabric and
# tcpdump, the Debian kernel's package unpacked beside it, and test/vm/guest/* installed
# as /init and /usr/local/bin. The tree is packed into one uncompressed cpio that the
# kernel unpacks as its root (no disk: nothing persists between boots, and a VM needs no
# cleanup but its process); uncompressed, because under TCG the guest's decompression
# costs seconds at every boot.
#
# Output in $UROCE_VM_WORK (default /tmp/uroce-vm):
#   image/vmlinux       the kernel as an ELF with a PVH entry (QEMU boots it directly,
#                       without the guest decompressing itself: ~4 s less under TCG);
#   image/vmlinuz       the same kernel as packaged, used when vmlinux cannot be made;
#   image/initrd.cpio   the root file system;
#   image/stamp         what the image was made from (packages, guest files): a boot
#                       compares it with the checkout (uvm's image_stale) and says so.
# Cached: tree/ (debootstrap, about 3 minutes the first time) and the kernel's package.
# A rebuild after a change to test/vm/guest/ only repacks (seconds); a change of the
# package list below re-runs debootstrap. --clean starts from nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=${UROCE_VM_WORK:-/tmp/uroce-vm}
tree=$work/tree
image=$work/image
suite=bookworm

# The guest's packages, one line a reason.
packages=(
	libibverbs1 ibverbs-providers ibverbs-utils librdmacm1 rdmacm-utils # the tools
	perftest python3 python3-pyverbs                                    # and the reference
	ucx-utils libfabric-bin                                             # test/eco's middleware
	iproute2 kmod procps busybox tcpdump ethtool                        # running it
)
# Kernel modules the guest loads (their dependencies are added): rxe and the RDMA core,
# the virtio devices run_vm gives it, 9p for --share, crc32 that rxe allocates at link
# time (without it "rdma link add" fails with ENOENT), and netem for loss tests.
modules=(
	rdma_rxe ib_uverbs rdma_ucm ib_umad crc32_generic crc32-pclmul
	virtio_pci virtio_net virtio_console virtio_rng 9pnet_virtio 9p
	sch_netem sch_prio cls_u32
)

die() {
	echo "image.sh: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap missing (apt-get install debootstrap)"

# archive [security]: the host's Debian archive, the first URI of its apt sources (deb822 or
# one-line) that is not its security archive; or, with "security", that one.
archive() {
	local want='!~' uri=
	[ "${1:-}" = security ] && want='~'
	if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
		uri=$(awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) if ($i '"$want"' /security/) { print $i; exit } }' \
			/etc/apt/sources.list.d/*.sources | head -n 1)
	fi
	if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/ && $i '"$want"' /security/) { print $i; exit } }' \
			/etc/apt/sources.list | head -n 1)
	fi
	echo "$uri"
}

if [ "${1:-}" = --clean ]; then
	rm -rf "$tree" "$work"/linux-image-*.deb "$image"
fi
mkdir -p "$work" "$image"
# What the tree is made of: a change of it redoes the tree.
pkgsum=$(printf '%s\n' "$suite" "${packages[@]}" updates security | sha256sum | cut -c1-16)

chroot_apt() {
	mountpoint -q "$tree/proc" || mount -t proc proc "$tree/proc"
	cp /etc/resolv.conf "$tree/etc/resolv.conf" 2>/dev/null || true
	chroot "$tree" "$@"
	local rc=$?
	umount "$tree/proc" 2>/dev/null || true
	return $rc
}

# ---- 1. the tree: debootstrap, redone when the package list changes ------------------------
if [ "$(cat "$tree/.uroce-packages" 2>/dev/null)" != "$pkgsum" ]; then
	uri=${UROCE_VM_ARCHIVE:-$(archive)}
	[ -n "$uri" ] || die "no Debian archive in /etc/apt (set UROCE_VM_ARCHIVE)"
	rm -rf "$tree" "$work"/linux-image-*.deb
	echo "image.sh: debootstrap $suite from $uri into $tree"
	debootstrap --variant=minbase --include="$(
		IFS=,
		echo "${packages[*]}"
	)" "$suite" "$tree" "$uri"
	# The point release, its updates and its security fixes, as the host has them: a guest
	# of the point release alone has its kernel, and 6.1.176's rxe oopses in
	# ibv_query_srq after a refused ibv_modify_srq, where the host's later 6.1 does not
	# (doc/interop.md).
	security=${UROCE_VM_SECURITY_ARCHIVE:-$(archive security)}
	{
		echo "deb $uri $suite main"
		echo "deb $uri $suite-updates main"
		[ -z "$security" ] || echo "deb $security $suite-security main"
	} >"$tree/etc/apt/sources.list"
	chroot_apt sh -c 'apt-get -q update >/dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get -q -y dist-upgrade >/dev/null &&
		apt-get clean' || die "cannot update the tree from the host's archives"
	echo "$pkgsum" >"$tree/.uroce-packages"
fi

# ---- 2. the kernel: Debian's package, unpacked (not installed: no initramfs is made) -------
# The package is kept (70 MiB), its 400 MiB of files only while the image is made.
if ! compgen -G "$work/linux-image-*.deb" >/dev/null; then
	rm -rf "$tree/tmp/kernel-debs"
	mkdir -p "$tree/tmp/kernel-debs"
	chroot_apt sh -c 'apt-get -q update >/dev/null &&
		pkg=$(apt-cache depends linux-image-amd64 | awk "/Depends: linux-image-/ { print \$2; exit }") &&
		cd /tmp/kernel-debs && apt-get -q download "$pkg"' || die "cannot download the kernel package"
	mv "$tree"/tmp/kernel-debs/linux-image-*.deb "$work/"
	rm -rf "$tree/tmp/kernel-debs"
fi
rm -rf "$work/kernel"
trap 'rm -rf "$work/kernel"' EXIT
dpkg-deb -x "$(compgen -G "$work/linux-image-*.deb" | head -n 1)" "$work/kernel"
kver=$(basename "$(ls -d "$work"/kernel/lib/modules/*)")
# The package carries no modules.dep: its postinst would make it.
depmod -b "$work/kernel" "$kver"

# ---- 3. the modules the guest loads, with their dependencies --------------------------------
rm -rf "$tree/lib/modules"
mkdir -p "$tree/lib/modules/$kver"
for m in "${modules[@]}"; do
	modprobe -d "$work/kernel" -S "$kver" --show-depends "$m" || die "no module $m in $kver"
done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r ko; do
	rel=${ko#"$work/kernel/lib/modules/$kver/"}
	install -D -m 0644 "$ko" "$tree/lib/modules/$kver/$rel"
done
cp "$work/kernel/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} \
	"$tree/lib/modules/$kver/"
depmod -b "$tree" "$kver"

# ---- 4. the kernel image: the packaged bzImage, and its ELF when it can be extracted -------
cp "$work/kernel/boot/vmlinuz-$kver" "$image/vmlinuz"
python3 "$here/vmlinux.py" "$image/vmlinuz" "$image/vmlinux.tmp" &&
	mv "$image/vmlinux.tmp" "$image/vmlinux" || rm -f "$image/vmlinux" "$image/vmlinux.tmp"

# ---- 5. our files ----------------------------------------------------------------------------
install -m 0755 "$here/guest/init" "$tree/init"
for f in "$here"/guest/*; do
	[ "$(basename "$f")" = init ] || install -m 0755 "$f" "$tree/usr/local/bin/"
done
echo uroce-vm >"$tree/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$tree/etc/hosts"
# busybox's applets where Debian's minbase has no program of the name.
for a in nc vi less; do
	command -p chroot "$tree" sh -c "command -v $a" >/dev/null 2>&1 ||
		ln -sf /bin/busybox "$tree/usr/local/bin/$a"
done

# ---- 6. the root file system, without what a test never reads ------------------------------
out=$image/initrd.cpio
(
	cd "$tree"
	find . \( -path ./usr/share/doc -o -path ./usr/share/man -o -path ./usr/share/info \
		-o -path ./usr/share/locale -o -path ./usr/share/i18n -o -path ./usr/share/zoneinfo \
		-o -path ./usr/share/lintian -o -path ./usr/share/common-licenses \
		-o -path ./var/cache -o -path ./var/lib/apt/lists -o -path ./usr/lib/udev/hwdb.bin \
		-o -path ./usr/lib/udev/hwdb.d -o -path ./usr/lib/x86_64-linux-gnu/gconv \
		-o -path ./boot -o -path ./proc -o -path ./sys -o -path ./dev \
		-o -name .uroce-packages \) -prune -o -print | LC_ALL=C sort
	# The kernel opens /dev/console for /init before anything mounts devtmpfs.
	printf '%s\n' ./proc ./sys ./dev ./dev/console ./dev/null
) | (cd "$tree" && cpio --quiet -o -H newc --owner=0:0) >"$out.tmp"
mv "$out.tmp" "$out"

# ---- 7. the stamp a boot checks --------------------------------------------------------------
{
	echo "kernel $kver"
	echo "packages $pkgsum"
	echo "guest $(cat "$here"/guest/* "$0" | sha256sum | cut -c1-16)"
} >"$image/stamp"
echo "image.sh: kernel $kver, $(du -h "$out" | cut -f1) root in $image"
