package approval

import (
	"errors"
	"fmt"
)

// ClientApart says whether an accept in this host's MCP client can count
// as approval.ProofClient. The client is the first process above the host
// that is not a wrapper (launch.go), and it is judged by the rule of
// apart.go as a client: it must not be, or descend from, another running
// host, the server it runs, or a process of that host's launching side
// (its client, its wrappers, its ancestors within its session), unless
// it is itself one of that side (a client that runs several hosts side by
// side). An agent that runs a host of its own and answers its elicitation
// is below the real client, whatever program stands between that client
// and its host. The first process above this host that is not a known
// wrapper is taken for the client: a client that launches its hosts
// through a program that is not a known wrapper has none of their accepts
// counted while another of its hosts runs, for that program cannot be
// told from an agent's own client (the rule fails closed).
//
// It returns a non-empty refusal when the client does not stand apart
// or this host cannot identify its client (Launch.Unknown), and a
// non-empty unverified when it could not be decided (no process table:
// the accept still counts, and the audit record says it was not
// verified). Like the terminal rule it stops an agent's own process
// tree, not a fake client detached with setsid and reparented to PID 1,
// nor one that dresses as a known wrapper. It reads the process table:
// never call it under a lock.
func (l Launch) ClientApart() (refusal, unverified string) {
	if l.unknown != "" {
		return "this host cannot identify its MCP client: " + l.unknown, ""
	}
	client := 0
	for _, a := range l.chain {
		if a.what == "" {
			client = a.pid
			break
		}
	}
	if client <= 1 {
		return "", "the MCP client above this host is not known"
	}
	err := apartFromHosts(client, true)
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, errHostsUnlisted):
		return "", err.Error()
	}
	return fmt.Sprintf("the MCP client (pid %d) was started under another host's session: %v", client, err), ""
}
