#!/usr/bin/env bash
# Commit messages since the convention holds (doc/design.md): a subject "area: summary" of
# at most 72 characters, then a body that says why. Prints each commit that breaks it and
# exits 1; exits 0 without checking where the history is too shallow to reach the base
# (a shallow clone has nothing to judge).
#   devtools/check_commits.sh [BASE]   (default: the first commit of the convention)
set -euo pipefail
cd "$(dirname "$0")/.."

# The first commit written under the convention; the ones before it are left as they are.
base=${1:-80e0360d5f235a999c89740fe89a3f32e063db3a}
git rev-parse -q --verify "$base^{commit}" >/dev/null 2>&1 || {
	echo "check_commits: $base is not in this history (shallow clone?): nothing checked"
	exit 0
}
bad=0
while read -r h; do
	subject=$(git log -1 --format=%s "$h")
	body=$(git log -1 --format=%b "$h" | tr -d '[:space:]')
	parents=$(git log -1 --format=%p "$h" | wc -w)
	[ "$parents" -gt 1 ] && continue # a merge says what it merges
	why=""
	[ "${#subject}" -le 72 ] || why="subject of ${#subject} characters, more than 72"
	[[ $subject =~ ^[A-Za-z0-9_./,+\ -]+:\ [^\ ] ]] || why="${why:+$why; }subject not \"area: summary\""
	[ -n "$body" ] || why="${why:+$why; }no body saying why"
	if [ -n "$why" ]; then
		echo "$(git log -1 --format=%h "$h") $subject: $why"
		bad=$((bad + 1))
	fi
done < <(git rev-list "$base^..HEAD")
if [ "$bad" -gt 0 ]; then
	echo "check_commits: $bad commit(s) break the convention (doc/design.md)" >&2
	exit 1
fi
echo "check_commits: every commit since $(git log -1 --format=%h "$base") follows the convention"
