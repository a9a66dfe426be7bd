#!/usr/bin/env bash
# test-time.sh measures the test suite at a base commit and in this working
# tree, side by side in one run, and prints three figures:
#
#   whole suite   go test ./... at the base and here: wall time, CPU time
#                 (user+sys of go test and of every process reaped by it or
#                 by a process it waited for; one that outlives its parent
#                 is not counted) and the ratios here/base. This tree has
#                 many more tests than an old base, so these ratios compare
#                 different work.
#   like for like the tests the base had, by name, run here: go test -run
#                 '^(names)$' over the base's packages that still exist,
#                 against the base's whole suite. A name is matched in every
#                 one of those packages (a name the base had in one package
#                 also runs where this tree has it in another); tests that
#                 were renamed since are not run; a kept test may assert
#                 more than it did. How many of the base's tests were found
#                 is printed.
#   per package   wall time of each package in both runs (go test's own
#                 "ok pkg Ns" figure), the slowest first.
#
# The load average is printed before and after each timed run: on a shared
# machine the wall times mean little without it. The CPU times depend less
# on the load, but they do too (caches, and processes that wait spinning).
#
# The base is checked out with git worktree into a temporary directory. The
# npm installs the tests use (every node_modules beside a package-lock.json
# of this tree) are copied from this tree when the base's package-lock.json
# is the same, so that neither side pays for npm ci. Both sides first build
# their test binaries (go test -run '^$'), untimed, then run -count=1 (no
# cached results) ROUNDS times each, alternating base and this tree so that
# a machine that slows down or speeds up weighs on both alike. Binaries the
# tests build themselves (the mcpepoch binary, test servers) are built in
# the timed runs, as a developer's go test ./... builds them: the base links
# them once per package; this tree's tests share them across packages and
# runs (internal/testenv Build) and relink only what changed since the last
# run. A failing suite is reported and counts: the time is still printed.
#
# Usage: scripts/test-time.sh [BASE]   (BASE defaults to 1871775)
#        ROUNDS=3 scripts/test-time.sh  (default 1; medians are printed)
#        GOTESTFLAGS='-p 1' scripts/test-time.sh  (extra go test flags)
#        LIKE=0 scripts/test-time.sh  (skip the like-for-like run)
#        PKGS='./host/... ./notify/...' scripts/test-time.sh  (packages, default ./...)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-1871775}
rounds=${ROUNDS:-1}
flags=${GOTESTFLAGS:-}
like=${LIKE:-1}
pkgs=${PKGS:-./...}

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
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

for lock in $(cd "$repo" && git ls-files '*package-lock.json'); do
	dir=$(dirname "$lock")
	if [ -d "$repo/$dir/node_modules" ] && cmp -s "$repo/$dir/package-lock.json" "$basedir/$dir/package-lock.json" 2>/dev/null &&
		[ ! -e "$basedir/$dir/node_modules" ]; then
		cp -a "$repo/$dir/node_modules" "$basedir/$dir/"
		# testenv.NPM reinstalls when npm's record is older than the lockfile.
		touch "$basedir/$dir/node_modules/.package-lock.json"
	fi
done

echo "building test binaries (untimed)"
(cd "$basedir" && go test -count=1 -run '^$' $pkgs >/dev/null 2>&1) || true
(cd "$repo" && go test -count=1 -run '^$' $pkgs >/dev/null 2>&1) || true

# The base's tests by name, and its packages that exist here.
(cd "$basedir" && go test -list '^Test' $pkgs 2>/dev/null) | grep -E '^Test' | sort -u >"$tmp/names" || true
(cd "$basedir" && go list $pkgs) | sort >"$tmp/base.pkgs"
(cd "$repo" && go list $pkgs) | sort >"$tmp/head.pkgs"
comm -12 "$tmp/base.pkgs" "$tmp/head.pkgs" >"$tmp/common.pkgs"
pattern="^($(paste -sd'|' "$tmp/names"))\$"
if [ "$like" = 1 ]; then
	found=$(cd "$repo" && go test -list "$pattern" $(cat "$tmp/common.pkgs") 2>/dev/null | grep -cE '^Test' || true)
	echo "like for like: $found tests here by the names of the base's $(wc -l <"$tmp/names") in $(wc -l <"$tmp/common.pkgs") of its $(wc -l <"$tmp/base.pkgs") packages"
fi

# run DIR LABEL ROUND ARGS…: one timed go test ARGS… in DIR; appends
# "wall cpu" seconds to $tmp/LABEL.times and keeps the output in
# $tmp/LABEL.ROUND.log.
run() {
	local dir=$1 label=$2 round=$3 status=0 before
	shift 3
	before=$(cut -d' ' -f1 /proc/loadavg)
	local TIMEFORMAT='%R %U %S'
	{ time (cd "$dir" && go test -count=1 $flags "$@" >"$tmp/$label.$round.log" 2>&1); } 2>"$tmp/time" || status=$?
	local wall cpu
	read -r wall user sys <"$tmp/time"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.1f", u + s}')
	echo "$wall $cpu" >>"$tmp/$label.times"
	local line
	line=$(printf '  %-5s round %d: wall %6.1fs  cpu %6.1fs  (load %s → %s)' "$label" "$round" "$wall" "$cpu" "$before" "$(cut -d' ' -f1 /proc/loadavg)")
	if [ "$status" -ne 0 ]; then
		local kept="${TMPDIR:-/tmp}/test-time-$label-$round.log"
		cp "$tmp/$label.$round.log" "$kept"
		echo "$line FAILED (exit $status); output kept in $kept; failures:"
		grep -E '^(--- FAIL|FAIL|panic:)' "$kept" | head -20 | sed 's/^/    /'
	else
		echo "$line"
	fi
}

echo "go test -count=1 $flags $pkgs, $rounds round(s) each, alternating"
for ((i = 1; i <= rounds; i++)); do
	run "$basedir" base "$i" $pkgs
	run "$repo" head "$i" $pkgs
	if [ "$like" = 1 ]; then
		run "$repo" like "$i" -run "$pattern" $(cat "$tmp/common.pkgs")
	fi
done

# median FILE COLUMN: the median of column COLUMN of FILE.
median() {
	awk -v c="$2" '{print $c}' "$1" | sort -n |
		awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# pkgtimes LOG: "package seconds" of every package go test reported.
pkgtimes() {
	awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /s$/ {sub(/s$/, "", $3); print $2, $3}' "$1" | sort
}

echo "per package, last round (seconds; - : not run): base | head | like for like"
join -a1 -a2 -e- -o0,1.2,2.2 <(pkgtimes "$tmp/base.$rounds.log") <(pkgtimes "$tmp/head.$rounds.log") >"$tmp/bh"
if [ "$like" = 1 ]; then
	join -a1 -e- -o0,1.2,1.3,2.2 "$tmp/bh" <(pkgtimes "$tmp/like.$rounds.log")
else
	awk '{print $0, "-"}' "$tmp/bh"
fi | sort -k3 -rn | awk '{sub("github.com/mcpepoch/mcpepoch", ".", $1); printf "  %-28s %8s | %8s | %8s\n", $1, $2, $3, $4}' | head -20

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
bw=$(median "$tmp/base.times" 1) bc=$(median "$tmp/base.times" 2)
hw=$(median "$tmp/head.times" 1) hc=$(median "$tmp/head.times" 2)
printf 'whole suite:   base wall %.1fs cpu %.1fs | head wall %.1fs cpu %.1fs | head/base wall %s cpu %s  (medians of %d)\n' \
	"$bw" "$bc" "$hw" "$hc" "$(ratio "$hw" "$bw")" "$(ratio "$hc" "$bc")" "$rounds"
if [ "$like" = 1 ]; then
	lw=$(median "$tmp/like.times" 1) lc=$(median "$tmp/like.times" 2)
	printf "like for like: base wall %.1fs cpu %.1fs | the base's tests here wall %.1fs cpu %.1fs | here/base wall %s cpu %s  (goal <= 0.60x)\n" \
		"$bw" "$bc" "$lw" "$lc" "$(ratio "$lw" "$bw")" "$(ratio "$lc" "$bc")"
fi
