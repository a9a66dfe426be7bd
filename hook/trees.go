package hook

import (
	"context"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// treesFunc is build.Spec.Trees.
type treesFunc = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error)

// treesTimeout bounds the wait for the hosts' trees; past it the hook
// walks them itself, and a host that has not answered is not sent the
// build signal either (notify.Peers): it is not answering. A host answers
// the trees request from what it keeps, at once.
const treesTimeout = notify.AnswerWait

// aheadLockWait is how long Record may wait for the manifest lock and
// still use the trees of a Spec.Ahead: a longer wait means another record
// held the lock, while more builds may have written since the hosts
// answered, so the hosts are asked again.
const aheadLockWait = 50 * time.Millisecond

// hostTree is one tree a host answered for, with the host's run id.
type hostTree struct {
	localapi.Tree
	run string
}

// Ahead is a trees request (localapi.TypeTrees) sent to every host of a
// project before Record takes the manifest lock, so that the hosts answer
// while the caller still reads mcpepoch.toml; its connections then carry
// Record's build signal. The request changes nothing in a host, and a host
// answers with its trees as they are when it reads the request, after the
// build that runs the hook wrote them. Close releases it; Record closes
// the Ahead of its Spec.
type Ahead struct {
	root   string
	peers  *notify.Peers
	cancel context.CancelFunc
	done   chan struct{}
	trees  []hostTree // set once done is closed
}

// AskAhead asks every host of the project at root for its trees, waiting
// at most min(timeout, notify.AnswerWait) for the answers, on a goroutine
// of its own; root is absolute with symlinks resolved, as Spec.Root.
func AskAhead(ctx context.Context, root string, timeout time.Duration) *Ahead {
	a := &Ahead{root: root, peers: notify.NewPeers(root), done: make(chan struct{})}
	ctx, a.cancel = context.WithCancel(ctx)
	go func() {
		defer close(a.done)
		a.trees = askTrees(ctx, a.peers, timeout)
	}()
	return a
}

// Close ends the request, if the hosts have not all answered yet, and
// closes the connections to them. It may be called more than once.
func (a *Ahead) Close() {
	if a.done != nil {
		a.cancel()
		<-a.done
	}
	a.peers.Close()
}

// askTrees asks every host of the project for the trees it keeps current
// (localapi.TypeTrees) and returns every tree they answered with. A host
// that does not know the request (an older one) or fails is left out.
func askTrees(ctx context.Context, peers *notify.Peers, timeout time.Duration) []hostTree {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, treesTimeout))
	defer cancel()
	var trees []hostTree
	for _, r := range peers.Broadcast(ctx, notify.Request{Type: localapi.TypeTrees}) {
		if r.Err != nil || r.Response.Type != localapi.TypeTrees {
			continue
		}
		p, err := localapi.DecodePayload[localapi.Trees](r.Response.Payload)
		if err != nil {
			continue
		}
		for _, t := range p.Trees {
			trees = append(trees, hostTree{t, r.Response.Run})
		}
	}
	return trees
}

// treesOf returns a build.Spec.Trees that takes each tree from the first
// host that has it, walking the others, with the run id of the host each
// tree came from reported to used. It returns nil when no host answered
// with a tree: then the hook walks as without hosts.
func treesOf(trees []hostTree, used func(run string)) treesFunc {
	if len(trees) == 0 {
		return nil
	}
	return func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error) {
		for _, t := range trees {
			if t.Is(root, opt) {
				used(t.run)
				return t.Build(), nil
			}
		}
		return walk()
	}
}
