#!/bin/sh
# bench-gateway.sh measures what the stdio gateway (mcpepoch host) adds to a
# tools/call compared with a direct connection to the same server, side by
# side in one run (BenchmarkGateway in host/bench_test.go, go-sdk client):
#
#   small  the fixture's version tool: latency per request
#   1MiB   a 1 MiB text result (host/testdata/bigserver): throughput
#
# It prints the benchmark output, then per case the median ns/op of each
# side, the via-host/direct ratio and the time added per request.
#
# Usage: scripts/bench-gateway.sh [BENCHTIME [COUNT]]   (default 2s 3)
set -eu

benchtime=${1:-2s}
count=${2:-3}
cd "$(dirname "$0")/.."

out=$(go test -run '^$' -bench '^BenchmarkGateway$' -benchtime "$benchtime" -count "$count" ./host)
printf '%s\n' "$out"
echo
printf '%s\n' "$out" | awk '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkGateway\// {
	name = $1
	sub(/-[0-9]+$/, "", name)          # the -GOMAXPROCS suffix
	split(name, part, "/")              # BenchmarkGateway, case, side
	for (i = 2; i < NF; i++)
		if ($(i+1) == "ns/op") ns[part[2], part[3]] = ns[part[2], part[3]] " " $i
	if (!(part[2] in seen)) { seen[part[2]] = 1; cases[++ncases] = part[2] }
}
END {
	if (ncases == 0) { print "no BenchmarkGateway results" > "/dev/stderr"; exit 1 }
	printf "%-6s %14s %14s %8s %14s\n", "case", "direct ns/op", "via-host ns/op", "ratio", "added/request"
	for (c = 1; c <= ncases; c++) {
		k = cases[c]
		d = median(ns[k, "direct"]); v = median(ns[k, "via-host"])
		printf "%-6s %14.0f %14.0f %7.2fx %11.1f µs\n", k, d, v, v / d, (v - d) / 1000
	}
}'
