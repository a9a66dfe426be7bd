package hook_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// treesHost serves a real host socket of the project that answers a trees
// request with trees, or with an unknown_type error when trees is nil (a
// host that predates the request), and every build signal with unchanged.
func treesHost(t *testing.T, root string, trees []localapi.Tree) {
	t.Helper()
	run := string(epoch.NewRunID(time.Now()))
	l, err := notify.Listen(root, run)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Serve(ctx, func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
			if req.Type != localapi.TypeTrees {
				return notify.Response{Type: string(localapi.OutcomeUnchanged), Run: run}
			}
			if trees == nil {
				return notify.ErrorResponse(notify.CodeUnknownType, "unknown request type")
			}
			return localapi.WithPayload(notify.Response{Run: run}, localapi.TypeTrees, localapi.Trees{Trees: trees})
		})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestRecordTakesHostTrees: the digest of a tree a host answers for (same
// root, same skip lists) is what the manifest records, and the hook does
// not walk it; a tree the host does not name as walked the same way, and a
// host that does not know the request, leave the hook to walk.
func TestRecordTakesHostTrees(t *testing.T) {
	s := project(t)
	dist := filepath.Join(s.Root, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.js"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Identity.Code = []string{"dist"}
	walked, err := build.TreeDigest(dist, build.TreeOptions{SkipDirs: build.CodeSkipDirs})
	if err != nil {
		t.Fatal(err)
	}
	told := build.DigestBytes([]byte("what the host knows"))
	code := func(res *hook.Result) build.Digest {
		for _, a := range res.Identity.Code {
			if a.Path == "dist" {
				return a.Digest
			}
		}
		t.Fatalf("no code tree dist in %+v", res.Identity.Code)
		return ""
	}
	for _, c := range []struct {
		name  string
		trees []localapi.Tree
		want  build.Digest
		from  bool
	}{
		{"same tree", []localapi.Tree{{Root: dist, SkipDirs: build.CodeSkipDirs, Digest: told, Files: 1, Bytes: 1}}, told, true},
		{"other skip lists", []localapi.Tree{{Root: dist, Digest: told, Files: 1, Bytes: 1}}, walked.Digest, false},
		{"older host", nil, walked.Digest, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			treesHost(t, s.Root, c.trees)
			res, err := hook.Record(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := code(res); got != c.want {
				t.Errorf("dist recorded as %s, want %s", got, c.want)
			}
			if (res.TreesFrom != "") != c.from {
				t.Errorf("TreesFrom %q, want set: %v", res.TreesFrom, c.from)
			}
		})
	}
}

// countingTreesHost serves a real host socket of the project that answers
// the n-th trees request (from 1) with the tree at root whose digest is
// digest(n), and every build signal with unchanged; it returns the number
// of trees requests so far.
func countingTreesHost(t *testing.T, root string, digest func(n int) build.Digest) func() int {
	t.Helper()
	run := string(epoch.NewRunID(time.Now()))
	l, err := notify.Listen(root, run)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Serve(ctx, func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
			if req.Type != localapi.TypeTrees {
				return notify.Response{Type: string(localapi.OutcomeUnchanged), Run: run}
			}
			mu.Lock()
			n++
			d := digest(n)
			mu.Unlock()
			tree := localapi.Tree{Root: filepath.Join(root, "dist"), SkipDirs: build.CodeSkipDirs, Digest: d, Files: 1, Bytes: 1}
			return localapi.WithPayload(notify.Response{Run: run}, localapi.TypeTrees, localapi.Trees{Trees: []localapi.Tree{tree}})
		})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestRecordTakesTreesAskedAhead: with the trees asked before Record
// (hook.AskAhead, as record does while it reads mcpepoch.toml), Record
// takes them from that answer without asking again; when it had to wait
// for the manifest lock, held by another record meanwhile, it asks again
// and records the later answer.
func TestRecordTakesTreesAskedAhead(t *testing.T) {
	s := project(t)
	dist := filepath.Join(s.Root, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "index.js"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Identity.Code = []string{"dist"}
	answers := func(n int) build.Digest { return build.DigestBytes([]byte{byte(n)}) }
	asked := countingTreesHost(t, s.Root, answers)
	code := func(res *hook.Result) build.Digest {
		for _, a := range res.Identity.Code {
			if a.Path == "dist" {
				return a.Digest
			}
		}
		t.Fatalf("no code tree dist in %+v", res.Identity.Code)
		return ""
	}

	s.Ahead = hook.AskAhead(context.Background(), s.Root, s.Timeout)
	res, err := hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got, n := code(res), asked(); got != answers(1) || n != 1 || res.TreesFrom == "" {
		t.Errorf("lock free: dist recorded as %s after %d trees requests (from %q), want the first answer %s and one request", got, n, res.TreesFrom, answers(1))
	}

	unlock, err := manifest.Lock(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	s.Ahead = hook.AskAhead(context.Background(), s.Root, s.Timeout)
	for asked() < 2 { // the ahead request answered before the lock is free
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		time.Sleep(time.Second) // past what Record takes to reach a free lock
		unlock()
	}()
	res, err = hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got, n := code(res), asked(); got != answers(3) || n != 3 {
		t.Errorf("after a wait for the lock: dist recorded as %s after %d trees requests, want the answer asked again, %s, and a third request", got, n, answers(3))
	}
}
