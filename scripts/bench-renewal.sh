#!/usr/bin/env bash
# bench-renewal.sh runs host's BenchmarkRenewalDecisionToLive and checks its
# speed target against the 90th percentile:
#
#   a person's decision on a renewal (the approval a key press in
#   mcpepoch approve or dev sends) → the grant live in a real host
#                                                         goal <= 100 ms
#
# Each sample first rebuilds the server (untimed) so that a renewal is
# prepared. Usage: scripts/bench-renewal.sh   (N=50 decisions by default)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-50}
out=$(cd "$repo" && go test ./host/ -run '^$' -bench 'RenewalDecisionToLive' -benchtime "${n}x")
echo "$out"
echo "$out" | awk '
	/decision-p90-ms/ { for (i = 1; i < NF; i++) if ($(i+1) == "decision-p90-ms") p = $i }
	END {
		if (p == "") { print "benchmark did not report"; exit 1 }
		printf "decision -> grant live p90 %.2f ms (goal <= 100)\n", p
		exit (p <= 100) ? 0 : 1
	}'
