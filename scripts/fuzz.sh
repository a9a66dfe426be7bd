#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target of the module briefly, one at a time:
# the inputs the host and the hook read from others (client and server
# JSON-RPC lines, local socket requests, manifest, mcpepoch.toml, grants
# files, audit logs, text shown on a terminal). Each target starts from its
# seeds (f.Add) and its checked-in corpus, testdata/fuzz/FuzzX/ beside it; a
# failure prints the input, which go test also writes there so that it
# becomes a regression test: check it in with the fix.
#
# Targets are found by name (func FuzzX in a _test.go file), so a new one
# runs without editing this script.
#
# Usage: scripts/fuzz.sh [FUZZTIME]   (default 3s per target; FUZZ_PARALLEL
# sets the workers per target, default 1 to stay frugal on shared machines)
set -euo pipefail

cd "$(dirname "$0")/.."
fuzztime=${1:-3s}
parallel=${FUZZ_PARALLEL:-1}

targets=$(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+\(' . |
	grep -v '/node_modules/' |
	sed -E 's#^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi

failed=0
n=0
while read -r dir name; do
	n=$((n + 1))
	printf -- '-- %s ./%s\n' "$name" "$dir"
	# go test -fuzz now and then ends a short run with "context deadline
	# exceeded" and no failing input (the engine, not the target): such a
	# run is tried once more; a failure with an input always counts.
	for try in 1 2; do
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s \
			-parallel "$parallel" "./$dir" >"${TMPDIR:-/tmp}/fuzz.$$.out" 2>&1; then
			break
		fi
		if [ "$try" -eq 1 ] && ! grep -q 'Failing input written' "${TMPDIR:-/tmp}/fuzz.$$.out" &&
			grep -q 'context deadline exceeded' "${TMPDIR:-/tmp}/fuzz.$$.out"; then
			echo "   the fuzzing engine ran out of time without a failing input; once more"
			continue
		fi
		cat "${TMPDIR:-/tmp}/fuzz.$$.out"
		failed=$((failed + 1))
		break
	done
done <<<"$targets"
rm -f "${TMPDIR:-/tmp}/fuzz.$$.out"

echo "$n fuzz targets, $failed failed, in ${SECONDS}s"
[ "$failed" -eq 0 ]
