package audit_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/audit/audittest"
)

// benchRecords is the size of the log the read benchmarks read: 300,000
// records, about 126 MB, the log of a few months of busy use.
// MCPEPOCH_BENCH_RECORDS overrides it.
func benchRecords() int {
	if n, err := strconv.Atoi(os.Getenv("MCPEPOCH_BENCH_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 300_000
}

// largeLog writes a log of benchRecords records in a temporary
// directory and returns its path.
func largeLog(b *testing.B) string {
	p := filepath.Join(b.TempDir(), "audit.jsonl")
	audittest.WriteLog(b, p, benchRecords())
	return p
}

// reportSize reports the log's size as the bytes each op reads, so that
// the output shows MB/s.
func reportSize(b *testing.B, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
}

// BenchmarkRead measures audit.Read of a large log: what mcpepoch policy,
// doctor, audit show and a host start with nothing enrolled pay.
func BenchmarkRead(b *testing.B) {
	p := largeLog(b)
	reportSize(b, p)
	done := audittest.CPU(b)
	for b.Loop() {
		recs, err := audit.Read(p)
		if err != nil || len(recs) < benchRecords() {
			b.Fatalf("%d records, %v", len(recs), err)
		}
	}
	done()
}

// BenchmarkVerify measures audit.Verify of a large log (audit verify,
// doctor).
func BenchmarkVerify(b *testing.B) {
	p := largeLog(b)
	reportSize(b, p)
	done := audittest.CPU(b)
	for b.Loop() {
		r, err := audit.Verify(p, audit.HeadPath(p))
		if err != nil || !r.OK {
			b.Fatalf("%v %v", err, r.Err())
		}
	}
	done()
}
