#!/bin/sh
# bench-audit.sh measures the audit writer, side by side in one run:
#
#   BenchmarkAuditWriter (host)  8 callers queue 8,000 calls (16,000 records)
#                                as fast as they can; the writer appends them
#                                in groups to a real log. backlog-ms is the
#                                time from the last record queued until all
#                                are written (target: at most 100 ms).
#   BenchmarkSealRecord (audit)  one record through the canonical encoder,
#                                and through json.Marshal + jcs.Transform.
#   BenchmarkAppendBatch (audit) records per second by group size.
#
# It prints the benchmark output, then the median backlog against the
# target and the encoder/reference ratio.
#
# Usage: scripts/bench-audit.sh [COUNT]   (default 5)
set -eu

count=${1:-5}
cd "$(dirname "$0")/.."

out=$(go test -run '^$' -bench '^BenchmarkAuditWriter$' -benchtime 3x -count "$count" ./host
	go test -run '^$' -bench '^Benchmark(SealRecord|AppendBatch)$' -count "$count" ./audit)
printf '%s\n' "$out"
echo
printf '%s\n' "$out" | awk '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkAuditWriter/ {
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "backlog-ms") backlog = backlog " " $i
		if ($(i+1) == "groups") groups = groups " " $i
	}
}
/^BenchmarkSealRecord\/encoder/ { for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") enc = enc " " $i }
/^BenchmarkSealRecord\/reference/ { for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") ref = ref " " $i }
END {
	if (backlog == "") { print "no BenchmarkAuditWriter results" > "/dev/stderr"; exit 1 }
	b = median(backlog)
	printf "audit backlog after 8,000 calls from 8 callers: %.1f ms (target <= 100 ms: %s), %.1f groups (fsyncs) per burst\n",
		b, b <= 100 ? "met" : "MISSED", median(groups)
	if (enc != "" && ref != "")
		printf "record encoder: %.0f ns/record, json.Marshal+jcs: %.0f ns/record (%.1fx faster)\n",
			median(enc), median(ref), median(ref) / median(enc)
}'
