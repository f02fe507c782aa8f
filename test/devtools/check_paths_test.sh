#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# devtools/check_paths.sh on throwaway git repositories: it passes on a clean tree that
# names system paths, scratch in /tmp, the parent of a subfolder and a binary file or an
# untracked file with a bad path in it, and fails, naming FILE:LINE, on a tree with one bad
# reference of each kind. The bad paths are put together at run time so that this file
# itself passes the check.
# usage: check_paths_test.sh CHECK_PATHS_SH
set -uo pipefail
script=${1:?usage: $0 path/to/check_paths.sh}
work=$(mktemp -d /tmp/uroce-check-paths.XXXXXX)
trap 'rm -rf "$work"' EXIT
up=.. sh=shared w=work r=root h=home m=mnt b=build-asan

failed=0 cases=0
pass() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	failed=$((failed + 1))
}

# The clean tree: the script in its place (it must pass itself) and lines it must accept.
clean=$work/clean
git init -q "$clean" && mkdir -p "$clean/devtools" "$clean/doc" "$clean/test/sub" &&
	cp "$script" "$clean/devtools/check_paths.sh" || exit 1
cat >"$clean/doc/ok.md" <<'EOF'
The image is built in `${UROCE_VM_WORK:-/tmp/uroce-vm}`; a test's scratch in /tmp/uroce-it-x.Ab12Cd.
libibverbs mapped: /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0 (read in /proc/self/maps)
Config in /etc/uroce, the socket in /run/uroce/a.sock, devices in /sys/class/infiniband and
/dev/infiniband, captures in /var/tmp/u.pcap; HOME=/root in the chroot; users live in /home.
See ../lib/verbs/verbs.c and https://example.org/home/alice/work/x ... or ~/src/uroce.
The daemon's shared memory (lib/shm) is shared, by design; "$IT_ROOT/work/x" and ${top}/root/y.
EOF
cat >"$clean/test/sub/meson.build" <<'EOF'
abi = meson.current_source_dir() / '..' / 'data'
test('x', find_program('t.sh'), args: [files('../other/t.py'), meson.project_source_root()])
EOF
cat >"$clean/meson_options.txt" <<'EOF'
option('pcap_dir', type: 'string', value: '',
    description: 'captures (default: test/data/rxe-captures)')
EOF
printf 'binary\0%s\n' "/$w/$sh/pcaps $up/$sh" >"$clean/test/sub/capture.pcap"
printf '%s\n' "$up/$sh/tools" >"$clean/untracked.txt"
ln -s ../doc/ok.md "$clean/test/link.md"
git -C "$clean" add devtools doc test meson_options.txt || exit 1

cases=$((cases + 1))
if out=$(bash "$clean/devtools/check_paths.sh" 2>&1); then
	pass "a clean tree passes"
else
	fail "a clean tree fails:"
	sed 's/^/    /' <<<"$out"
fi

# expect_bad NAME FILE LINE TEXT: with TEXT as line LINE of FILE (created, or appended to
# an existing file as its next line), the check exits 1 naming FILE:LINE.
expect_bad() {
	local name=$1 file=$2 line=$3 text=$4 repo out rc
	cases=$((cases + 1))
	repo=$work/case$cases
	cp -a "$clean" "$repo" || exit 1
	mkdir -p "$(dirname "$repo/$file")"
	[ -e "$repo/$file" ] || printf '# line 1\n# line 2\n' >"$repo/$file"
	printf '%s\n' "$text" >>"$repo/$file"
	git -C "$repo" add "$file" || exit 1
	out=$(bash "$repo/devtools/check_paths.sh" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q "^$file:$line: " <<<"$out"; then
		pass "$name: $(grep "^$file:$line: " <<<"$out" | head -n 1)"
	else
		fail "$name: exit $rc, no $file:$line in:"
		sed 's/^/    /' <<<"$out"
	fi
}

expect_bad "the sibling in a shell default" test/a.sh 3 \
	"RXE_VM_DIR=\${RXE_VM_DIR:-\$IT_ROOT/$up/$sh/tools/rxe-vm}"
expect_bad "the sibling two steps up, in prose" doc/a.md 3 "as in $up/$up/$sh/README.md"
expect_bad "the sibling by a shell cd" devtools/a.sh 3 \
	"ln -sfn \"\$(cd \"\$top/$up\" && pwd)/$sh\" \"\$dir/$sh\""
expect_bad "the sibling by a meson join" test/sub/meson.build 3 \
	"abi_dir = meson.current_source_dir() / '$up' / '$up' / '$sh' / 'abi'"
expect_bad "its captures, no parent step" test/a.c 3 " * rxe's MADs (the captures in $sh/pcaps):"
expect_bad "its tools" app/a.c 3 " * the peer of the VM's tool ($sh/tools/rxe-vm/guest)"
expect_bad "its design notes" doc/b.md 3 "the lists in \`$sh/design/abi\`"
expect_bad "a top-level work folder" doc/ok.md 7 \
	"libibverbs mapped: /$w/main/build-v2/lib/verbs/libibverbs.so.1.14.44"
expect_bad "a file in root's home" doc/c.md 3 "copy it to /$r/uroce.conf first"
expect_bad "a user's home" test/b.sh 3 "BUILD=/$h/alice/uroce/build"
expect_bad "a mount of one machine" doc/d.md 3 "captures from /$m/nfs/pcaps"
expect_bad "a build tree in scratch" doc/e.md 3 \
	"ok   it is ours (/tmp/ci/run-3/$b/lib/verbs/libibverbs.so.1)"
expect_bad "the parent of the source root" meson.build 3 \
	"pcaps = meson.project_source_root() / '$up' / 'pcaps'"
expect_bad "an absolute option default" meson_options.txt 3 \
	"option('abi_dir', type: 'string', value: '/srv/abi')"
expect_bad "an option default above the checkout" meson_options.txt 3 \
	"option('abi_dir', type: 'string', value: '$up/abi')"

# expect_bad_link NAME LINK TARGET: a tracked symbolic link to TARGET fails, naming LINK.
expect_bad_link() {
	local name=$1 link=$2 target=$3 repo out rc
	cases=$((cases + 1))
	repo=$work/case$cases
	cp -a "$clean" "$repo" || exit 1
	ln -s "$target" "$repo/$link" && git -C "$repo" add "$link" || exit 1
	out=$(bash "$repo/devtools/check_paths.sh" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q "^$link: " <<<"$out"; then
		pass "$name: $(grep "^$link: " <<<"$out")"
	else
		fail "$name: exit $rc, no $link in:"
		sed 's/^/    /' <<<"$out"
	fi
}
expect_bad_link "a link to an absolute path" test/pcaps /srv/pcaps
expect_bad_link "a link out of the checkout" test/pcaps "$up/$up/$sh/pcaps"

echo "$cases cases, $failed failed"
[ "$failed" -eq 0 ]
