package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// Revision is a catalog revision (localapi.Revision).
type Revision = localapi.Revision

// Catalog is the tools/list of one epoch.
type Catalog struct {
	Revision Revision
	Tools    []json.RawMessage // each tool as the server sent it
	Names    []string
}

// maxPages bounds tools/list paging against a server whose cursors never end.
const maxPages = 1000

// fetchCatalog pages through tools/list on child c (MCP tools/list,
// cursor/nextCursor) with private ids.
func (h *Host) fetchCatalog(ctx context.Context, c *child) (*Catalog, error) {
	var tools []json.RawMessage
	var cursor string
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
		}
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		raw, err := h.privateCall(ctx, c, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return newCatalog(tools)
}

func newCatalog(tools []json.RawMessage) (*Catalog, error) {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	arr, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	canon, err := jcs.Transform(arr)
	if err != nil {
		return nil, fmt.Errorf("tools/list result: canonical JSON: %v", err)
	}
	cat := &Catalog{Revision: Revision(build.DigestBytes(canon)), Tools: tools}
	for _, t := range tools {
		var n struct {
			Name string `json:"name"`
		}
		json.Unmarshal(t, &n)
		cat.Names = append(cat.Names, n.Name)
	}
	return cat, nil
}
