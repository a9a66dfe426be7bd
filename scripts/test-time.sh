#!/usr/bin/env bash
# test-time.sh measures the wall time of the whole test suite, go test ./...,
# at a base commit and in this working tree, side by side in one run, and
# prints both and their ratio (this tree / base). Goal: <= 0.6x.
#
# The base is checked out with git worktree into a temporary directory. The
# npm installs the tests use (node_modules of examples/inventory-node and
# testdata/node) are copied from this tree when their package-lock.json is
# the same, so that neither side pays for npm ci. Both sides first build
# their test binaries (go test -run '^$'), untimed, then run -count=1 (no
# cached results) ROUNDS times each, alternating base and this tree so that
# a machine that slows down or speeds up weighs on both alike. A failing
# suite is reported and counts: the time is still printed.
#
# Usage: scripts/test-time.sh [BASE]   (BASE defaults to 1871775)
#        ROUNDS=3 scripts/test-time.sh  (default 1)
#        GOTESTFLAGS='-p 1' scripts/test-time.sh  (extra go test flags)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-1871775}
rounds=${ROUNDS:-1}
flags=${GOTESTFLAGS:-}

gopath=$(go env GOPATH)
export PATH="${gopath%%:*}/bin:$PATH"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-time.XXXXXX")
basedir=$tmp/base
cleanup() {
	git -C "$repo" worktree remove --force "$basedir" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

git -C "$repo" worktree add --detach "$basedir" "$base" >/dev/null 2>&1 ||
	{ echo "cannot check out $base" >&2; exit 2; }
echo "base $(git -C "$basedir" log -1 --format='%h %s')"
echo "head $(git -C "$repo" log -1 --format='%h %s')$(git -C "$repo" diff --quiet HEAD || echo ' (with uncommitted changes)')"

for dir in examples/inventory-node testdata/node; do
	if [ -d "$repo/$dir/node_modules" ] && cmp -s "$repo/$dir/package-lock.json" "$basedir/$dir/package-lock.json"; then
		cp -a "$repo/$dir/node_modules" "$basedir/$dir/"
		# testenv.NPM reinstalls when npm's record is older than the lockfile.
		touch "$basedir/$dir/node_modules/.package-lock.json"
	fi
done

# run DIR LABEL ROUND: one timed go test ./... in DIR; appends seconds to
# $tmp/LABEL.times and keeps the output in $tmp/LABEL.ROUND.log.
run() {
	local dir=$1 label=$2 round=$3 start end status=0
	start=$(date +%s.%N)
	(cd "$dir" && go test -count=1 $flags ./... >"$tmp/$label.$round.log" 2>&1) || status=$?
	end=$(date +%s.%N)
	local secs
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
	echo "$secs" >>"$tmp/$label.times"
	if [ "$status" -ne 0 ]; then
		local kept="${TMPDIR:-/tmp}/test-time-$label-$round.log"
		cp "$tmp/$label.$round.log" "$kept"
		echo "  $label round $round: ${secs}s FAILED (exit $status); output kept in $kept; failures:"
		grep -E '^(--- FAIL|FAIL|panic:)' "$kept" | head -20 | sed 's/^/    /'
	else
		echo "  $label round $round: ${secs}s"
	fi
}

echo "building test binaries (untimed)"
(cd "$basedir" && go test -count=1 -run '^$' ./... >/dev/null 2>&1) || true
(cd "$repo" && go test -count=1 -run '^$' ./... >/dev/null 2>&1) || true

echo "go test -count=1 $flags ./..., $rounds round(s) each, alternating"
for ((i = 1; i <= rounds; i++)); do
	run "$basedir" base "$i"
	run "$repo" head "$i"
done

# median FILE: the median of the numbers in FILE, one per line.
median() {
	sort -n "$1" | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
echo "slowest packages (last round): base | head"
paste -d'|' \
	<(grep -hE '^(ok|FAIL|---)' "$tmp/base.$rounds.log" | awk '$1=="ok"||$1=="FAIL"{print $3, $2}' | sort -rn | head -5) \
	<(grep -hE '^(ok|FAIL|---)' "$tmp/head.$rounds.log" | awk '$1=="ok"||$1=="FAIL"{print $3, $2}' | sort -rn | head -5) |
	sed 's/|/  |  /; s/^/  /'
b=$(median "$tmp/base.times")
h=$(median "$tmp/head.times")
printf 'base %.1fs  head %.1fs  head/base %.2fx  (goal <= 0.60x; medians of %d)\n' \
	"$b" "$h" "$(awk -v b="$b" -v h="$h" 'BEGIN {print h / b}')" "$rounds"
