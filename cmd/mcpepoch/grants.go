package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// runGrants lists the grants of every agent run of the project, live and
// revoked, from the hosts' grant files. A grant of an agent run whose host
// is gone is shown as revoked (host_gone).
func runGrants(_ context.Context, args []string, stdio Stdio) error {
	fs := newFlags("grants", stdio.Err, "[--json] [--live]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	asJSON := fs.Bool("json", false, "print a JSON array on stdout")
	liveOnly := fs.Bool("live", false, "only live grants")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	// A corrupt grants file is reported, one line each, and the others are
	// still listed; the exit status then says something was not read.
	stores, err := grant.ReadAll(layout.Grants(root))
	corrupt := 0
	if err != nil {
		var errs []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		} else {
			errs = []error{err}
		}
		for _, e := range errs {
			var ce *grant.CorruptError
			if !errors.As(e, &ce) {
				return err
			}
			corrupt++
			fmt.Fprintf(stdio.Err, "mcpepoch: error: grants file %s: corrupt, not listed: %s\n", printable(ce.Path), printableText(ce.Err.Error()))
		}
	}
	now := time.Now()
	all := listGrants(stores, vouchedGrants(root), *liveOnly, now)
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	var done error
	if corrupt > 0 {
		done = silentExit(exitUsage)
	}
	if *asJSON {
		if err := writeJSON(stdio.Out, all); err != nil {
			return err
		}
		return done
	}
	if len(all) == 0 {
		what := "no grants"
		if *liveOnly {
			what = "no live grants"
		}
		fmt.Fprintf(stdio.Out, "%s in %s\n", what, printable(layout.Grants(root)))
		return done
	}
	// One aligned column per field; every value goes through printable,
	// which escapes tabs too, so no value can shift a column.
	tw := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GRANT\tSTATE\tAGENT RUN\tEPOCH\tTOOLS\tCREDENTIAL\tUNTIL\tBY")
	for _, g := range all {
		state := "live"
		if !g.Live(now) {
			state = "revoked"
			if g.RevokedReason != "" {
				state += " (" + g.RevokedReason + ")"
			} else {
				state = "expired"
			}
		}
		until := g.ExpiresWhen
		if g.ExpiresAt != nil {
			until += " (" + g.ExpiresAt.Local().Format(time.DateTime) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			printable(string(g.ID)), printable(state), printable(string(g.AgentRun)), printable(string(g.ExecutionEpoch)),
			printableList(g.ToolScope, ","), orDash(g.CredentialScope), printable(until), printable(g.ApprovedBy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return done
}

// vouchedGrants asks every host of the project which grants it holds
// live: agent run → grant → its JSON at the host. The files are the hosts'
// records, not their word: a hand-edited or rolled-back file can show a
// grant as live that its host revoked or never made, and a host killed
// without a chance to revoke its run's grants vouches for nothing.
func vouchedGrants(root string) map[string]map[epoch.GrantID][]byte {
	vouched := map[string]map[epoch.GrantID][]byte{}
	for _, r := range askHosts(context.Background(), root, 5*time.Second, notify.Request{Type: localapi.TypeGrants}) {
		if r.Err != nil {
			continue
		}
		live, err := localapi.DecodePayload[[]*grant.Grant](r.Response.Payload)
		if err != nil {
			continue
		}
		m := map[epoch.GrantID][]byte{}
		for _, g := range live {
			m[g.ID], _ = json.Marshal(g)
		}
		vouched[r.Response.Run] = m
	}
	return vouched
}

// listGrants returns the grants of stores to list (only the live ones
// with liveOnly); one live in its file but not vouched for by its host is
// shown revoked, with the reason unvouched gives, and not written back.
func listGrants(stores map[string]*grant.Store, vouched map[string]map[epoch.GrantID][]byte, liveOnly bool, now time.Time) []*grant.Grant {
	all := []*grant.Grant{}
	for _, s := range stores {
		for _, g := range s.Grants {
			if g.Live(now) {
				if reason := unvouched(vouched, g); reason != "" {
					t := now
					g.RevokedAt, g.RevokedReason = &t, reason // shown, not written: the file is the host's
				}
			}
			if !liveOnly || g.Live(now) {
				all = append(all, g)
			}
		}
	}
	return all
}

// unvouched says why grant g, live in its file, is not live at its host:
// "host_gone" when no host of its agent run answered, "not_held_by_host"
// when the host holds no such grant live or holds a different one (the
// file was edited or rolled back); "" when the host vouches for it.
func unvouched(vouched map[string]map[epoch.GrantID][]byte, g *grant.Grant) string {
	held, ok := vouched[string(g.AgentRun)]
	if !ok {
		return "host_gone"
	}
	mine, _ := json.Marshal(g)
	if theirs, ok := held[g.ID]; !ok || string(theirs) != string(mine) {
		return "not_held_by_host"
	}
	return ""
}

// runRevoke ends one grant: the host that holds it revokes it. The
// request goes two ways: a request file (localapi.RevokeFile), written first,
// which the host that holds the grant reads within a quarter second
// whatever holds its socket, and the socket request. When no host
// confirms over the socket and one could not take the request (busy,
// unreachable or failing: it may hold the grant), revoke waits up to
// revokeWait for the grant's file to show it ended.
func runRevoke(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("revoke", stdio.Err, "GRANT-ID (or a unique prefix)")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("revoke takes one grant id (see %s grants)", selfcmd.Name())
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	id, inFile, err := resolveGrant(root, fs.Arg(0))
	if err != nil {
		return err
	}
	file := layout.RevokeRequest(root, id)
	werr := writeRevokeRequest(root, id)
	if werr != nil {
		fmt.Fprintf(stdio.Err, "revoke request file: %v (asking over the socket only)\n", werr)
	}
	payload, _ := json.Marshal(localapi.RevokeRequest{ID: id})
	unanswered, notFound := 0, 0
	for _, r := range askHosts(ctx, root, 10*time.Second, notify.Request{Type: localapi.TypeRevoke, Payload: payload}) {
		if r.Err == nil && r.Response.Type == localapi.TypeRevoke {
			os.Remove(file)
			fmt.Fprintf(stdio.Out, "revoked grant %s (agent run %s)\n", printable(string(id)), printable(r.Response.Run))
			return nil
		}
		if re, ok := errors.AsType[*notify.RemoteError](r.Err); r.Err != nil && (!ok || re.Code != localapi.CodeNotFound) {
			// Busy, unreachable or failing: it may hold the grant.
			fmt.Fprintln(stdio.Err, hostErrorLine(root, r))
			unanswered++
		} else if ok {
			notFound++
		}
	}
	if unanswered == 0 && notFound > 0 && inFile {
		// A host answered that it holds no such grant live, where the
		// grant's file had it live: it may have read the request file
		// first (within a quarter second) and ended it then. Its file
		// says so, from the host's own write.
		if g, _ := waitRevoked(ctx, root, id, 0); g != nil && g.RevokedReason == grant.RevokedByUser {
			os.Remove(file)
			fmt.Fprintf(stdio.Out, "revoked grant %s (agent run %s)\n", printable(string(id)), printable(string(g.AgentRun)))
			return nil
		}
	}
	if unanswered > 0 && werr != nil {
		return fmt.Errorf("grant %s not revoked: %d host(s) of the project at %s could not take the request (busy, unreachable or failing) and may hold it live, and the request file could not be written; to end it for certain now, close the MCP client that runs the host (a grant ends with its host), or try again", printable(string(id)), unanswered, printable(root))
	}
	if unanswered > 0 {
		g, err := waitRevoked(ctx, root, id, revokeWait)
		if g == nil {
			waited := fmt.Sprintf("within %s", revokeWait)
			if err != nil {
				waited = fmt.Sprintf("before the wait ended (%v)", err)
			}
			return fmt.Errorf("grant %s not confirmed revoked: %d host(s) of the project at %s could not take the request over the socket (busy, unreachable or failing), and the grant's file does not show it ended %s of the request file %s; the request file stays, and the host that holds the grant ends it when it reads it: check with %s, and to end it for certain now, close the MCP client that runs the host (a grant ends with its host)",
				printable(string(id)), unanswered, printable(root), waited, printable(file), selfcmd.Cmd("grants"))
		}
		fmt.Fprintf(stdio.Out, "revoked grant %s (agent run %s) through the request file: %d host(s) could not take the request over the socket\n",
			printable(string(id)), printable(string(g.AgentRun)), unanswered)
		return nil
	}
	os.Remove(file)
	if !inFile {
		return usageError("no grant with that id (%s) at any host of the project at %s: see "+selfcmd.Name()+" grants", printable(string(id)), printable(root))
	}
	return usageError("grant %s is not live at any host of the project at %s: its host is gone, and a grant ends with its host", printable(string(id)), printable(root))
}

// revokeWait is how long revoke waits for the host to act on its request
// file when no host confirmed over the socket.
const revokeWait = 10 * time.Second

// writeRevokeRequest writes the request file for grant id (localapi.RevokeFile)
// in one piece, mode 0600.
func writeRevokeRequest(root string, id epoch.GrantID) error {
	if err := layout.MkdirAll(layout.Revokes(root)); err != nil {
		return err
	}
	b, err := json.Marshal(localapi.RevokeFile{V: 1, Grant: id, RequestedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	return atomicfile.Write(layout.RevokeRequest(root, id), append(b, '\n'), 0o600)
}

// waitRevoked waits up to limit for grant id to show revoked in the
// project's grant files, and returns it; nil when it did not (with ctx's
// error when ctx ended first).
func waitRevoked(ctx context.Context, root string, id epoch.GrantID, limit time.Duration) (*grant.Grant, error) {
	deadline := time.Now().Add(limit)
	for {
		stores, _ := grant.ReadAll(layout.Grants(root))
		for _, s := range stores {
			for _, g := range s.Grants {
				if g.ID == id && g.RevokedAt != nil {
					return g, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resolveGrant returns the whole id of the one grant of the project whose
// id starts with prefix (as --run takes a prefix of an agent run), from
// the hosts' grant files, and whether a file has it: a whole id no file
// has is still asked of the hosts, whose word counts, not their files'.
// It refuses a prefix no grant has ("no grant with that id"), several,
// and a grant that is no longer live, saying when and why it ended.
func resolveGrant(root, prefix string) (epoch.GrantID, bool, error) {
	stores, _ := grant.ReadAll(layout.Grants(root)) // a corrupt file: the hosts still answer by id
	var found []*grant.Grant
	for _, s := range stores {
		for _, g := range s.Grants {
			if strings.HasPrefix(string(g.ID), prefix) {
				found = append(found, g)
			}
		}
	}
	switch {
	case len(found) == 0 && len(prefix) == ulidLen:
		return epoch.GrantID(prefix), false, nil
	case len(found) == 0:
		return "", false, usageError("no grant with that id (%s) in %s: see "+selfcmd.Name()+" grants", printable(prefix), printable(layout.Grants(root)))
	case len(found) > 1:
		ids := make([]string, len(found))
		for i, g := range found {
			ids[i] = string(g.ID)
		}
		sort.Strings(ids)
		return "", false, usageError("%d grants have ids starting with %s (%s): give more of the id", len(found), printable(prefix), printableList(ids, ", "))
	}
	g := found[0]
	now := time.Now()
	switch {
	case g.RevokedAt != nil:
		return "", true, usageError("grant %s already revoked at %s (%s)", printable(string(g.ID)), g.RevokedAt.Local().Format(time.DateTime), printable(g.RevokedReason))
	case !g.Live(now) && g.ExpiresAt != nil:
		return "", true, usageError("grant %s already expired at %s", printable(string(g.ID)), g.ExpiresAt.Local().Format(time.DateTime))
	case !g.Live(now):
		return "", true, usageError("grant %s is no longer live", printable(string(g.ID)))
	}
	return g.ID, true, nil
}

// ulidLen is the length of a whole id (a ULID).
const ulidLen = 26
