package hook_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/hook"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/manifest"
	"github.com/mcpepoch/mcpepoch/notify"
)

// project returns a short project root (sockets live in it) holding a
// server script, and the Spec of a build of it.
func project(t *testing.T) hook.Spec {
	t.Helper()
	d, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	root, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "server.sh"), []byte("exec cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return hook.Spec{Root: root, Label: "fixture", Timeout: 10 * time.Second,
		Identity: build.Spec{Dir: root, Command: []string{"sh", "server.sh"}, CacheDir: layout.Cache(root)}}
}

// fakeHost answers every request on a real host socket of the project with
// answer, and records the requests it got.
func fakeHost(t *testing.T, root string, answer notify.Response) *[]notify.Request {
	t.Helper()
	l, err := notify.Listen(root, string(epoch.NewRunID(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []notify.Request
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Serve(ctx, func(_ context.Context, _ notify.Peer, req notify.Request) notify.Response {
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			return answer
		})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &got
}

// signals returns the build signals among reqs: what is not a request
// for the host's trees.
func signals(reqs []notify.Request) []notify.Request {
	var out []notify.Request
	for _, r := range reqs {
		if r.Type != localapi.TypeTrees {
			out = append(out, r)
		}
	}
	return out
}

func TestRecordSignalsEveryHost(t *testing.T) {
	s := project(t)
	reqs := fakeHost(t, s.Root, notify.Response{Type: string(localapi.OutcomeRestarted), OldEpoch: "A", NewEpoch: "B"})
	var seen *hook.Build
	s.Recorded = func(b *hook.Build) {
		seen = b
		if len(signals(*reqs)) != 0 {
			t.Error("Recorded was called after a host was signalled")
		}
	}
	res, err := hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Manifest != res.Manifest || !res.First || res.Failed() {
		t.Errorf("Recorded saw %+v; result %+v", seen, res.Build)
	}
	m, err := manifest.Read(layout.Manifest(s.Root))
	if err != nil || m.Build.ID != res.File.Build.ID || m.Label != "fixture" {
		t.Fatalf("manifest on disk %+v, %v; want the recorded build", m, err)
	}
	if len(res.Hosts) != 1 || res.Hosts[0].Outcome != localapi.OutcomeRestarted || res.Hosts[0].Response.NewEpoch != "B" {
		t.Fatalf("hosts = %+v, want one restarted", res.Hosts)
	}
	if r := signals(*reqs)[0]; r.Type != localapi.TypeBuildComplete || r.Build != string(m.Build.ID) || r.Manifest != res.Manifest {
		t.Errorf("host got %+v", r)
	}
	if _, err := os.Stat(layout.Builds(s.Root)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("builds log written although a host heard of the build: %v", err)
	}

	// A failed build is announced as such, and the second build is not
	// the first.
	s.ExitCode, s.Recorded = 3, nil
	res, err = hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.First || !res.Failed() || res.File.Build.Status != manifest.StatusFailed {
		t.Errorf("failed build recorded as %+v", res.File.Build)
	}
	if r := signals(*reqs)[1]; r.Type != localapi.TypeBuildFailed || r.ExitCode != 3 {
		t.Errorf("host got %+v, want build_failed with exit code 3", r)
	}
}

func TestRecordHostErrorIsAnOutcome(t *testing.T) {
	s := project(t)
	fakeHost(t, s.Root, notify.ErrorResponse("restart_failed", "no"))
	res, err := hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 1 || res.Hosts[0].Outcome != localapi.OutcomeError || res.Hosts[0].Err == nil {
		t.Errorf("hosts = %+v, want one error outcome", res.Hosts)
	}
}

func TestRecordNoHostKeepsBuildsLog(t *testing.T) {
	s := project(t)
	res, err := hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hosts == nil || len(res.Hosts) != 0 || res.BuildsLogErr != nil {
		t.Fatalf("hosts %v (nil %v), builds log error %v", res.Hosts, res.Hosts == nil, res.BuildsLogErr)
	}
	recs, err := audit.Read(layout.Builds(s.Root))
	if err != nil || len(recs) != 1 || recs[0].Type != audit.TypeBuildRecorded || recs[0].Fields["build"] != string(res.File.Build.ID) {
		t.Errorf("builds log = %+v, %v; want the build", recs, err)
	}
}

func TestRecordLeavesCorruptManifest(t *testing.T) {
	s := project(t)
	mpath := layout.Manifest(s.Root)
	if err := layout.MkdirAll(filepath.Dir(mpath)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mpath, []byte("schema = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := fakeHost(t, s.Root, notify.Response{Type: string(localapi.OutcomeRestarted)})
	_, err := hook.Record(context.Background(), s)
	var me *hook.ManifestError
	var ce *manifest.CorruptError
	if !errors.As(err, &me) || me.Path != mpath || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *ManifestError around a *manifest.CorruptError", err)
	}
	// The trees request, which changes nothing in a host, goes out while
	// the manifest is read; the build signal must not.
	if b, _ := os.ReadFile(mpath); string(b) != "schema = \"x\"\n" || len(signals(*reqs)) != 0 {
		t.Errorf("manifest now %q, host requests %+v; want it untouched and no signal", b, *reqs)
	}
}

func TestRecordInterrupted(t *testing.T) {
	s := project(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt"))
	_, err := hook.Record(ctx, s)
	var ie *hook.InterruptedError
	if !errors.As(err, &ie) || ie.Cause.Error() != "interrupt" {
		t.Fatalf("err = %v, want an *InterruptedError", err)
	}
	if _, err := os.Stat(layout.Manifest(s.Root)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted record wrote the manifest: %v", err)
	}
}

// A manifest whose fsync fails is in place and the hosts are told, but
// Record says so (ManifestSyncErr), for record to end with an error.
func TestRecordReportsFailedManifestSync(t *testing.T) {
	s := project(t)
	failed := errors.New("fsync: input/output error")
	hook.SetPublish(t, func(path string, f *manifest.File) (func() error, error) {
		sync, err := manifest.Publish(path, f)
		if err != nil {
			return nil, err
		}
		return func() error { sync(); return failed }, nil
	})
	res, err := hook.Record(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.ManifestSyncErr, failed) {
		t.Errorf("ManifestSyncErr = %v, want %v", res.ManifestSyncErr, failed)
	}
	if _, err := manifest.Read(layout.Manifest(s.Root)); err != nil {
		t.Errorf("the manifest is not in place: %v", err)
	}
}
