package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// approveWeb asks each host for an approval page (proof presence: an
// enrolled authenticator signs the grant's digest there), prints one URL
// per host on stdout, opens them unless noOpen, and waits until each is
// decided. base is the request for a review, tools not yet settled.
func approveWeb(ctx context.Context, reviews []localapi.Review, sockets map[epoch.RunID]string, base func(localapi.Review) localapi.ApproveRequest, noOpen bool, stdio Stdio) error {
	type page struct {
		rv localapi.Review
		w  localapi.WebApproval
	}
	var pages []page
	for _, rv := range reviews {
		req, ok := settle(rv, base(rv), stdio)
		if !ok {
			continue
		}
		payload, _ := json.Marshal(req)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := notify.Send(cctx, sockets[rv.AgentRun], notify.Request{Type: localapi.TypeApproveWeb, Payload: payload})
		cancel()
		if err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: %w", rv.AgentRun, err)}
		}
		var w localapi.WebApproval
		if err := json.Unmarshal(resp.Payload, &w); err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: approve_web answer: %v", rv.AgentRun, err)}
		}
		fmt.Fprintln(stdio.Out, printable(w.URL))
		fmt.Fprintf(stdio.Err, "agent run %s: approve on the page, code %s\n", printable(string(rv.AgentRun)), printable(w.ShortCode))
		printRoot(stdio.Err)
		if !noOpen {
			openBrowser(w.URL)
		}
		pages = append(pages, page{rv, w})
	}
	failed := 0
	for _, p := range pages {
		g, err := waitDecided(ctx, sockets[p.rv.AgentRun], p.w.Digest)
		if err != nil {
			fmt.Fprintf(stdio.Err, "agent run %s: %v\n", printable(string(p.rv.AgentRun)), err)
			failed++
			continue
		}
		printApproved(stdio, g)
	}
	if failed > 0 || len(pages) == 0 {
		return silentExit(exitHostError)
	}
	return nil
}

// waitDecided asks the host for the page's decision until there is one.
func waitDecided(ctx context.Context, socket, digest string) (*grant.Grant, error) {
	payload, _ := json.Marshal(localapi.WaitRequest{Digest: digest})
	for {
		cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		resp, err := notify.Send(cctx, socket, notify.Request{Type: localapi.TypeApproveWait, Payload: payload})
		cancel()
		var re *notify.RemoteError
		switch {
		case errors.As(err, &re) && re.Code == localapi.CodePending:
			continue
		case err != nil:
			return nil, err
		}
		var g grant.Grant
		if err := json.Unmarshal(resp.Payload, &g); err != nil {
			return nil, fmt.Errorf("approve_wait answer: %v", err)
		}
		return &g, nil
	}
}

// openBrowser opens url in the person's browser, best effort.
func openBrowser(url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if cmd := exec.Command(name, url); cmd.Start() == nil {
		go cmd.Wait()
	}
}
