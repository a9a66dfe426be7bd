package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// A person's revoke reaches the host two ways: the socket (serveRevoke),
// and a request file, .mcpepoch/revoke/<grant id>, which mcpepoch revoke
// writes beside its socket request. A program of the user can hold every
// socket slot the host serves, and its overflow lane, for as long as it
// likes; it cannot keep a file from being written. Every revokePoll the
// host looks for the request of each grant it holds live (one lstat per
// live grant: no directory is listed, so files put there in bulk cost
// nothing), ends the grant a well-formed request names, audits it
// (grant_revoked, via "request_file") and removes the request. A request
// that does not read as one (another user's file, a link, not the
// RevokeFile format, another grant's id) is refused once, audited
// (revoke_refused) and left where it is for a person to look at;
// the grant stays.
//
// What the file does not stop: a program that can write .mcpepoch can
// remove a request before the host reads it (mcpepoch revoke then says
// the grant was not confirmed ended), and the grant file mcpepoch revoke
// reads to confirm is the user's own file too.

// revokePoll is how often a host looks for revoke requests.
const revokePoll = 250 * time.Millisecond

// maxRevokeFile bounds a revoke request's size.
const maxRevokeFile = 4 << 10

// watchRevokes acts on revoke request files until ctx ends.
func (h *Host) watchRevokes(ctx context.Context) {
	if h.opts.Dir == "" {
		return
	}
	refused := map[string]string{} // path → stamp of the request refused
	t := time.NewTicker(revokePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		var ids []epoch.GrantID
		if h.grants != nil {
			for _, g := range h.grants.Live(time.Now()) {
				ids = append(ids, g.ID)
			}
		}
		h.mu.Unlock()
		for _, id := range ids {
			path := layout.RevokeRequest(h.opts.Dir, id)
			fi, err := os.Lstat(path)
			if err != nil {
				continue
			}
			stamp := fmt.Sprint(fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			if refused[path] == stamp {
				continue
			}
			uid, err := readRevokeFile(path, id, fi)
			if err != nil {
				refused[path] = stamp
				h.logf("%v: the grant stays (%s %s writes a well-formed one)", err, selfcmd.Cmd("revoke"), id)
				h.audit.event(audit.TypeRevokeRefused, "", h.run, map[string]any{"grant": id, "file": path, "error": err.Error()})
				continue
			}
			delete(refused, path)
			if _, err := h.revokeBy(id, uidName(uid), "request_file"); err == nil {
				h.logf("grant %s revoked by %s (request file %s)", id, uidName(uid), path)
			}
			os.Remove(path)
		}
	}
}

// readRevokeFile checks the request at path (fi its lstat) for grant id
// and returns its owner's uid: a regular file of this user, at most
// maxRevokeFile bytes, holding a localapi.RevokeFile (no other member) of version
// 1 for id. The error names the file and the field at fault.
func readRevokeFile(path string, id epoch.GrantID, fi os.FileInfo) (int, error) {
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("revoke request %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	uid := os.Geteuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return 0, fmt.Errorf("revoke request %s: owned by uid %d, not by this host's user (uid %d)", path, st.Uid, uid)
	}
	b, err := safefile.ReadFileNoFollow(path, maxRevokeFile)
	if err != nil {
		return 0, fmt.Errorf("revoke request %s: %w", path, err)
	}
	var r localapi.RevokeFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return 0, fmt.Errorf("revoke request %s: not a revoke request (%v)", path, err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return 0, fmt.Errorf("revoke request %s: something follows the request", path)
	}
	switch {
	case r.V != 1:
		return 0, fmt.Errorf("revoke request %s: field v: %d, want 1", path, r.V)
	case r.Grant != id:
		return 0, fmt.Errorf("revoke request %s: field grant: %q, want the file's name, %s", path, r.Grant, id)
	}
	return uid, nil
}
