package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
)

// approveSSH approves with an OpenSSH FIDO key (proof presence): for each
// host it asks for the grant digest, has ssh-keygen -Y sign it in
// namespace mcpepoch-grant@v1 (a touch of the key; the short code on the
// screen names the grant, since the key shows nothing), and hands the
// signature to the host, which verifies it.
func approveSSH(ctx context.Context, key string, reviews []localapi.Review, sockets map[epoch.RunID]string, base func(localapi.Review) localapi.ApproveRequest, stdio Stdio) error {
	if err := refusePlainSSHKey(key); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpepoch-approve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i, rv := range reviews {
		req, ok := settle(rv, base(rv), stdio)
		if !ok {
			continue
		}
		resp, err := sendTo(ctx, sockets[rv.AgentRun], localapi.TypeProposeSSH, req)
		if err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: %w", rv.AgentRun, err)}
		}
		w, _ := localapi.DecodePayload[localapi.WebApproval](resp.Payload)
		d, err := proposedAsAsked(rv, req, w)
		if err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: not signed: %v", rv.AgentRun, err)}
		}
		fmt.Fprintf(stdio.Err, "agent run %s: signing a grant of tools %s, credential scopes %s, on epoch %s, until %s\n", printable(string(rv.AgentRun)),
			printableList(w.Proposal.ToolScope, ", "), orDash(w.Proposal.CredentialScope), printable(string(w.Proposal.ExecutionEpoch)), printable(w.Proposal.ExpiresWhen))
		msg := filepath.Join(tmp, fmt.Sprintf("grant-%d", i))
		if err := os.WriteFile(msg, d[:], 0o600); err != nil {
			return err
		}
		fmt.Fprintf(stdio.Err, "agent run %s: grant code %s: touch your key to sign it\n", printable(string(rv.AgentRun)), printable(w.ShortCode))
		printRoot(stdio.Err)
		cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "sign", "-n", sshsig.GrantNamespace, "-f", key, msg)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdio.Err, stdio.Err
		if err := cmd.Run(); err != nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("ssh-keygen -Y sign -f %s: %v", key, err)}
		}
		sig, err := os.ReadFile(msg + ".sig")
		if err != nil {
			return err
		}
		resp, err = sendTo(ctx, sockets[rv.AgentRun], localapi.TypeApproveSSH, localapi.SSHApproveRequest{Digest: d.String(), Signature: string(sig)})
		if err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: %w", rv.AgentRun, err)}
		}
		var g grant.Grant
		json.Unmarshal(resp.Payload, &g)
		printApproved(stdio, &g)
	}
	return nil
}

// proposedAsAsked returns the digest of w's proposal once it is checked
// against what the person asked for (req, on review rv): the digest is
// computed here from the proposal, never taken from the answer, and the
// proposal must name rv's agent run, epoch and catalog, req's expiry, the
// tools req names (with --all, tools of rv's catalog), and req's
// credential scopes (with --all, scopes of rv's review). Whatever listens
// on the host's socket answers propose_ssh: a relay that widens the grant
// is refused here, before a person's key signs it.
func proposedAsAsked(rv localapi.Review, req localapi.ApproveRequest, w localapi.WebApproval) (grant.Digest, error) {
	p := w.Proposal
	if p == nil {
		return grant.Digest{}, errors.New("the answer names no proposal to check")
	}
	d, err := p.Digest()
	if err != nil {
		return grant.Digest{}, fmt.Errorf("the proposal: %v", err)
	}
	if got, err := grant.ParseDigest(w.Digest); err != nil || got != d {
		return grant.Digest{}, errors.New("the digest named is not the proposal's")
	}
	names := make([]string, 0, len(rv.Tools))
	for _, def := range rv.Tools {
		var t struct {
			Name string `json:"name"`
		}
		json.Unmarshal(def, &t)
		names = append(names, t.Name)
	}
	var wrong []string
	switch {
	case p.AgentRun != string(rv.AgentRun):
		wrong = append(wrong, "agent run "+p.AgentRun)
	case p.ExecutionEpoch != rv.Epoch:
		wrong = append(wrong, "epoch "+string(p.ExecutionEpoch))
	case p.CatalogRevision != string(rv.CatalogRevision):
		wrong = append(wrong, "catalog "+p.CatalogRevision)
	case req.Expires != "" && p.ExpiresWhen != req.Expires:
		wrong = append(wrong, "expiry "+p.ExpiresWhen)
	}
	tools := slices.Sorted(slices.Values(req.Tools))
	if req.All {
		for _, t := range p.ToolScope {
			if !slices.Contains(names, t) {
				wrong = append(wrong, "tool "+t+", which the review does not list")
			}
		}
	} else if !slices.Equal(p.ToolScope, slices.Compact(tools)) {
		wrong = append(wrong, "tools "+strings.Join(p.ToolScope, ", ")+" where "+strings.Join(tools, ", ")+" were asked for")
	}
	if creds := slices.Sorted(slices.Values(req.Credentials)); len(req.Credentials) > 0 || !req.All {
		if !slices.Equal(p.CredentialScope, slices.Compact(creds)) && !(len(p.CredentialScope) == 0 && len(creds) == 0) {
			wrong = append(wrong, "credential scopes "+strings.Join(p.CredentialScope, ", ")+" where "+strings.Join(creds, ", ")+" were asked for")
		}
	}
	if len(wrong) > 0 {
		return grant.Digest{}, fmt.Errorf("the grant proposed is not the one asked for (%s): is something other than the host listening on its socket?", strings.Join(wrong, "; "))
	}
	return d, nil
}

// settle fills in the tools (the pending requests when none are named)
// and the credential scopes they use.
func settle(rv localapi.Review, req localapi.ApproveRequest, stdio Stdio) (localapi.ApproveRequest, bool) {
	// The renewal comes first: what the person approved before the
	// rebuild, on the new epoch (--renewal asks for it by name).
	if r := rv.Renewal; !req.All && len(req.Tools) == 0 && r != nil && len(r.Tools) > 0 {
		fmt.Fprintf(stdio.Err, "agent run %s: renewal %s: %s on epoch %s (changed, not included: %s; new, not included: %s; dropped: %s)\n",
			printable(string(rv.AgentRun)), printable(r.ShortCode), printableList(r.Tools, ", "), printable(string(r.Epoch)),
			orDash(r.ChangedTools()), orDash(r.AddedTools()), orDash(r.Dropped))
		return r.Request(nil, req.Channel), true
	}
	if req.Renewal != "" {
		fmt.Fprintf(stdio.Err, "agent run %s: no renewal to approve\n", printable(string(rv.AgentRun)))
		return req, false
	}
	if !req.All && len(req.Tools) == 0 {
		for _, p := range rv.Pending {
			if p.Epoch == rv.Epoch && !containsString(req.Tools, p.Tool) {
				req.Tools = append(req.Tools, p.Tool)
			}
		}
	}
	if !req.All && len(req.Tools) == 0 {
		fmt.Fprintf(stdio.Err, "agent run %s: no pending requests: name the tools with --tools or --all\n", printable(string(rv.AgentRun)))
		return req, false
	}
	if len(req.Credentials) == 0 && !req.All {
		req.Credentials = rv.Scopes(req.Tools)
	}
	return req, true
}

func containsString(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// sendTo sends one request with payload v to socket.
func sendTo(ctx context.Context, socket, typ string, v any) (notify.Response, error) {
	payload, _ := json.Marshal(v)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return notify.Send(cctx, socket, notify.Request{Type: typ, Payload: payload})
}

// printApproved writes the line of a new grant.
func printApproved(stdio Stdio, g *grant.Grant) {
	fmt.Fprintln(stdio.Err, approvedLine(*g))
}
