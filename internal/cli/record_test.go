package cli

import (
	"errors"
	"io"
	"testing"

	"github.com/mcpepoch/mcpepoch/hook"
)

// A manifest whose fsync failed ends record with an error (exit 1), as the
// README promises, though the build is recorded and hosts were told.
func TestFinishRecordFailedManifestSync(t *testing.T) {
	failed := errors.New("write manifest.toml: fsync: input/output error")
	res := &hook.Result{Hosts: []hook.HostOutcome{}, ManifestSyncErr: failed}
	err := finishRecord(Stdio{Out: io.Discard, Err: io.Discard}, RecordOutput{}, res, t.TempDir(), false, false, false)
	if !errors.Is(err, failed) || Report(io.Discard, err) != ExitFailure {
		t.Errorf("finishRecord = %v (exit %d), want %v and exit %d", err, Report(io.Discard, err), failed, ExitFailure)
	}
}
