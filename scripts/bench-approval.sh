#!/usr/bin/env bash
# bench-approval.sh runs the benchmarks of ceremony/bench_test.go and checks
# the approval page's speed targets against their 90th percentiles:
#
#   (a) approval page served (GET to last byte)             goal <= 50 ms
#   (b) authenticator's answer posted → decision delivered  goal <= 100 ms
#
# Usage: scripts/bench-approval.sh   (N=200 samples by default)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-200}
out=$(cd "$repo" && go test ./ceremony/ -run '^$' -bench 'ApprovalPage|AssertionToDecision' -benchtime "${n}x")
echo "$out"
echo "$out" | awk '
	/page-p90-ms/     { for (i = 1; i < NF; i++) if ($(i+1) == "page-p90-ms")     page = $i }
	/decision-p90-ms/ { for (i = 1; i < NF; i++) if ($(i+1) == "decision-p90-ms") dec = $i }
	END {
		if (page == "" || dec == "") { print "benchmarks did not report"; exit 1 }
		printf "(a) page p90 %.2f ms (goal <= 50)\n(b) decision p90 %.2f ms (goal <= 100)\n", page, dec
		exit (page <= 50 && dec <= 100) ? 0 : 1
	}'
