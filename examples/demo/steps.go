package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// useRevisionA is step 4.
// The JSON-RPC error codes of a refused authorization, as docs/host.md
// lists them: no grant covers the call, or the grant names an older
// execution epoch.
const (
	codeAuthorizationRequired = -31010
	codeAuthorizationStale    = -31011
)

func (d *demo) useRevisionA(ctx context.Context, s *mcp.ClientSession) error {
	d.heading("4. The client uses revision A, once a person approves")
	names, err := d.listTools(ctx, s)
	if err != nil {
		return err
	}
	if want := []string{"inventory_adjust", "inventory_lookup", "inventory_order"}; !slices.Equal(names, want) {
		return d.fail("tools = %v, want %v", names, want)
	}
	args := map[string]any{"sku": "widget", "delta": 5}
	if err := d.refused(ctx, s, "inventory_adjust", args, codeAuthorizationRequired); err != nil {
		return err
	}
	if _, err := d.approve(ctx); err != nil {
		return err
	}
	if _, err := d.call(ctx, s, "inventory_adjust", args); err != nil {
		return err
	}
	got, err := d.call(ctx, s, "inventory_lookup", map[string]any{"sku": "widget"})
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=A"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	// inventory_order asks the host for the supplier token during the
	// call (credentials.Get): the grant covers the tool and its scope.
	got, err = d.call(ctx, s, "inventory_order", map[string]any{"sku": "gadget", "quantity": 3})
	if err != nil {
		return err
	}
	if want := "sku=gadget quantity=3 revision=A"; got != want {
		return d.fail("inventory_order = %q, want %q", got, want)
	}
	return nil
}

// restart is what mcpepoch record reported for the rebuild.
type restart struct {
	oldEpoch, newEpoch string
	oldPID, newPID     string
}

// restartedRE matches mcpepoch record's line for a host that restarted its
// server; what follows "; " says what else happened (grants revoked).
var restartedRE = regexp.MustCompile(`^server restarted: epoch ([0-9A-Z]{26}) → ([0-9A-Z]{26}), pid ([0-9]+) → ([0-9]+)(; .*)?$`)

// rebuildB is step 5.
func (d *demo) rebuildB(ctx context.Context) (restart, error) {
	d.heading("5. Change the code: add inventory_history, build revision B, record")
	d.drainNotices()
	if err := d.buildServer(ctx, "-overlay", "testdata/overlay.json", "-ldflags", "-X main.revision=B"); err != nil {
		return restart{}, err
	}
	lines, err := d.record(ctx)
	if err != nil {
		return restart{}, err
	}
	if err := expectChanged(lines, "bin/inventory-server"); err != nil {
		return restart{}, d.fail("%v", err)
	}
	for _, l := range lines {
		if m := restartedRE.FindStringSubmatch(l); m != nil {
			r := restart{oldEpoch: m[1], newEpoch: m[2], oldPID: m[3], newPID: m[4]}
			if r.oldEpoch == r.newEpoch || r.oldPID == r.newPID {
				return restart{}, d.fail("the restart kept its epoch or pid: %q", l)
			}
			return r, nil
		}
	}
	return restart{}, d.fail("mcpepoch record did not report a restart (want a line matching %q)", restartedRE)
}

// useRevisionB is step 6.
func (d *demo) useRevisionB(ctx context.Context, s *mcp.ClientSession) error {
	d.heading("6. The client is told and re-lists; the grant ended with epoch A")
	select {
	case <-d.notices:
	case <-time.After(noticeTimeout):
		return d.fail("the client received no notifications/tools/list_changed within %s", noticeTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	names, err := d.listTools(ctx, s)
	if err != nil {
		return err
	}
	if want := []string{"inventory_adjust", "inventory_history", "inventory_lookup", "inventory_order"}; !slices.Equal(names, want) {
		return d.fail("tools = %v, want %v", names, want)
	}
	lookup := map[string]any{"sku": "widget"}
	if err := d.refused(ctx, s, "inventory_lookup", lookup, codeAuthorizationStale); err != nil {
		return err
	}
	if _, err := d.approve(ctx); err != nil {
		return err
	}
	got, err := d.call(ctx, s, "inventory_history", lookup)
	if err != nil {
		return err
	}
	if want := "sku=widget revision=B\ndelta=+5 quantity=5 revision=A"; got != want {
		return d.fail("inventory_history = %q, want %q", got, want)
	}
	got, err = d.call(ctx, s, "inventory_lookup", lookup)
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=B"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	return nil
}

// rebuildSame is step 7.
func (d *demo) rebuildSame(ctx context.Context, s *mcp.ClientSession, r restart) error {
	d.heading("7. Rebuild the same code and record: nothing restarts, the grant holds")
	d.drainNotices()
	if err := d.buildServer(ctx, "-overlay", "testdata/overlay.json", "-ldflags", "-X main.revision=B"); err != nil {
		return err
	}
	lines, err := d.record(ctx)
	if err != nil {
		return err
	}
	if err := expectLine(lines, "build complete: nothing changed"); err != nil {
		return d.fail("%v", err)
	}
	if err := expectLine(lines, fmt.Sprintf("running server unchanged: pid=%s epoch=%s", r.newPID, r.newEpoch)); err != nil {
		return d.fail("%v", err)
	}
	// Nothing restarted, so no list_changed is due; give a wrong one a
	// moment to arrive.
	select {
	case <-d.notices:
		return d.fail("the client received notifications/tools/list_changed although nothing changed")
	case <-time.After(quietPeriod):
	}
	d.out.line("[client]", "(no notification: nothing restarted)")
	// Same epoch, so the grant still holds.
	got, err := d.call(ctx, s, "inventory_lookup", map[string]any{"sku": "widget"})
	if err != nil {
		return err
	}
	if want := "sku=widget quantity=5 revision=B"; got != want {
		return d.fail("inventory_lookup = %q, want %q", got, want)
	}
	return nil
}

// status is step 8.
func (d *demo) status(ctx context.Context, r restart) error {
	d.heading("8. mcpepoch status")
	lines, err := d.mcpepoch(ctx, "[status]", "status")
	if err != nil {
		return err
	}
	text := strings.Join(lines, "\n")
	if want := "(" + label + "): ready"; !strings.Contains(text, want) {
		return d.fail("status does not say %q", want)
	}
	if !strings.Contains(text, r.newEpoch) {
		return d.fail("status does not name epoch %s", r.newEpoch)
	}
	return nil
}

// drainNotices forgets notifications received so far.
func (d *demo) drainNotices() {
	for {
		select {
		case <-d.notices:
		default:
			return
		}
	}
}

// expectLine returns an error unless lines contains want.
func expectLine(lines []string, want string) error {
	if slices.Contains(lines, want) {
		return nil
	}
	return fmt.Errorf("mcpepoch record did not print %q (it printed %q)", want, lines)
}

// expectChanged returns an error unless lines has a "build complete: … changed"
// line naming path among the changed files.
func expectChanged(lines []string, path string) error {
	for _, l := range lines {
		files, ok := strings.CutPrefix(l, "build complete: ")
		if !ok {
			continue
		}
		if files, ok = strings.CutSuffix(files, " changed"); ok && slices.Contains(strings.Split(files, ", "), path) {
			return nil
		}
	}
	return fmt.Errorf("mcpepoch record did not print \"build complete: %s changed\" (it printed %q)", path, lines)
}
