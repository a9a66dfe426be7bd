package hook

import (
	"context"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify/proto"
)

// treesFunc is build.Spec.Trees.
type treesFunc = func(root string, opt build.TreeOptions, walk func() (build.Tree, error)) (build.Tree, error)

// treesTimeout bounds the wait for the hosts' trees; past it the hook
// walks them itself, and a host that has not answered is not sent the
// build signal either (proto.Peers): it is not answering. A host answers
// the trees request from what it keeps, at once.
const treesTimeout = proto.AnswerWait

// hostTrees asks every host of the project for the trees it keeps current
// (localapi.TypeTrees) and returns a build.Spec.Trees that takes each tree
// from the first host that has it, walking the others, with the run id of
// the host each tree came from reported to used. It returns nil when no
// host answered with a tree: then the hook walks as without hosts. A host
// that does not know the request (an older one) or fails is left out.
func hostTrees(ctx context.Context, peers *proto.Peers, timeout time.Duration, used func(run string)) treesFunc {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, treesTimeout))
	defer cancel()
	type known struct {
		localapi.Tree
		run string
	}
	var trees []known
	for _, r := range peers.Broadcast(ctx, proto.Request{Type: localapi.TypeTrees}) {
		if r.Err != nil || r.Response.Type != localapi.TypeTrees {
			continue
		}
		p, err := localapi.DecodePayload[localapi.Trees](r.Response.Payload)
		if err != nil {
			continue
		}
		for _, t := range p.Trees {
			trees = append(trees, known{t, r.Response.Run})
		}
	}
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
