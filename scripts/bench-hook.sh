#!/usr/bin/env bash
# bench-hook.sh measures the build hook, mcpepoch record, on a real Node
# project: it installs @modelcontextprotocol/server-everything from npm into
# a temporary project, writes its mcpepoch.toml (node and the package's
# dist/index.js), builds mcpepoch and an empty Go program, warms the hook
# (two records 3 s apart, so that every file is older than the caches' 2 s
# racy window), then runs the benchmarks of cmd/mcpepoch/hook_bench_test.go,
# each interleaving what it compares, ROUNDS rounds (default 30):
#
#   (a) warm mcpepoch record (nothing changed, no host listening) against
#       starting the empty Go program                     goal <= 1.5x
#       with, to see where the time goes, the start of mcpepoch itself
#       (mcpepoch version) and the identity computed in process
#       (BenchmarkComputeWarm: config, manifest, build.Compute)
#   (b) cold build.TreeDigest of node_modules (no cache) against SHA-256
#       over the same bytes read as one stream, as a throughput ratio
#                                                         goal >= 0.8x
#       and against find -type f -print0 | xargs -0 sha256sum
#   (c) a warm identity with a 2,000-file dist/ code tree against the same
#       project with code = [] (build.BenchmarkCodeTreeWarm)  goal <= 5 ms added
#
# Medians are compared; the fastest and the 90th percentile are printed too.
#
# Usage: scripts/bench-hook.sh   (needs go, node, npm and access to npm)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-30}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-hook.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
proj=$tmp/project

echo "installing @modelcontextprotocol/server-everything into $proj"
mkdir "$proj"
if ! npm install --prefix "$proj" --no-audit --no-fund --loglevel=error \
	@modelcontextprotocol/server-everything >"$tmp/npm.log" 2>&1; then
	cat "$tmp/npm.log" >&2
	exit 1
fi
entry=node_modules/@modelcontextprotocol/server-everything/dist/index.js
test -f "$proj/$entry" || { echo "npm installed no $entry" >&2; exit 1; }
cat >"$proj/mcpepoch.toml" <<EOF
label = "everything"
command = ["node", "$entry", "stdio"]
EOF

(cd "$repo" && go build -o "$tmp/" ./cmd/mcpepoch)
mkdir "$tmp/noop"
printf 'package main\n\nfunc main() {}\n' >"$tmp/noop/main.go"
(cd "$tmp/noop" && GO111MODULE=off go build -o "$tmp/noop/noop" main.go)

tree=$proj/node_modules
echo "tree: $(find "$tree" -type f | wc -l | tr -d ' ') files, $(find "$tree" -type d | wc -l | tr -d ' ') directories," \
	"$(find "$tree" -type l | wc -l | tr -d ' ') symbolic links, $(du -sh "$tree" | cut -f1) on disk;" \
	"runtime $(command -v node) ($(node --version), $(du -h "$(readlink -f "$(command -v node)")" | cut -f1))"

echo "warming the hook"
(cd "$proj" && NO_COLOR=1 "$tmp/mcpepoch" record)
sleep 3
(cd "$proj" && NO_COLOR=1 "$tmp/mcpepoch" record)
echo

(cd "$repo" && MCPEPOCH_BENCH_PROJECT=$proj MCPEPOCH_BENCH_BIN=$tmp/mcpepoch \
	MCPEPOCH_BENCH_NOOP=$tmp/noop/noop MCPEPOCH_BENCH_TREE=$tree \
	go test -run '^$' -bench '^Benchmark(HookWarm|ComputeWarm|TreeCold)$' -benchtime "${rounds}x" -count 1 ./cmd/mcpepoch) |
	tee "$tmp/bench.txt"
echo

awk -v rounds="$rounds" '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i += 2) m[name, $(i+1)] = $i
	if (name == "ComputeWarm") m[name, "compute-ms"] = $3 / 1e6
	seen[name] = 1
}
function row(label, n, k) {
	printf "  %-38s %8.2f ms  (fastest %.2f, p90 %.2f)\n", label, m[n, k "-ms"], m[n, k "-min-ms"], m[n, k "-p90-ms"]
}
END {
	if (!("HookWarm" in seen) || !("ComputeWarm" in seen) || !("TreeCold" in seen)) { print "missing benchmark results" > "/dev/stderr"; exit 1 }
	printf "medians of %d interleaved rounds:\n", rounds
	row("warm mcpepoch record", "HookWarm", "hook")
	row("exec of an empty Go program", "HookWarm", "noop")
	row("exec of mcpepoch version", "HookWarm", "version")
	printf "  %-38s %8.2f ms  (mean, in process)\n", "warm identity (config+manifest+Compute)", m["ComputeWarm", "compute-ms"]
	printf "  tree: %d files, %.1f MB\n", m["TreeCold", "files"], m["TreeCold", "MB"]
	row("cold TreeDigest (no cache)", "TreeCold", "tree")
	row("sha256 over the bytes as one stream", "TreeCold", "stream")
	row("find | xargs sha256sum", "TreeCold", "sha256sum")
	printf "ratios:\n"
	printf "  (a) warm hook / empty program start   %6.2fx  (goal <= 1.5x)\n", m["HookWarm", "hook/noop"]
	printf "  (b) cold tree / one-stream throughput %6.2fx  (goal >= 0.8x)\n", m["TreeCold", "tree/stream-throughput"]
	printf "      cold tree speed-up over sha256sum %6.2fx\n", m["TreeCold", "tree/sha256sum-speedup"]
}' "$tmp/bench.txt"

# (c) what the project's own code tree adds to a warm identity: a dist/ of
# 2,000 files, with the code tree and without it, interleaved. Goal <= 5 ms.
echo
(cd "$repo" && go test -run '^$' -bench '^BenchmarkCodeTreeWarm$' -benchtime "${rounds}x" -count 1 ./build) |
	awk '/^BenchmarkCodeTreeWarm/ { for (i = 3; i < NF; i += 2) m[$(i+1)] = $i }
	END {
		if (!("added-ms/op" in m)) { print "missing BenchmarkCodeTreeWarm results" > "/dev/stderr"; exit 1 }
		printf "  (c) a 2,000-file code tree adds %.2f ms to a warm identity (%.2f with, %.2f without; goal <= 5 ms)\n", m["added-ms/op"], m["with-ms"], m["without-ms"]
	}'
