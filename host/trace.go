package host

import (
	"encoding/json"
	"fmt"
)

// trace logs one message for mcpepoch host -v (Options.Verbose): where it
// came from or goes, its JSON-RPC kind, method, id and size in bytes. It
// never logs params or results: they may carry what a tool was given or
// answered (credentials, personal data).
func (h *Host) trace(dir string, line []byte) {
	if !h.opts.Verbose {
		return
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &env) != nil {
		h.logf("%s: %d bytes, not one JSON-RPC object", dir, len(line))
		return
	}
	id := ""
	if len(env.ID) > 0 && string(env.ID) != "null" {
		id = " id " + string(env.ID)
	}
	var what string
	switch {
	case env.Method != "" && id != "":
		what = "request " + env.Method + id
	case env.Method != "":
		what = "notification " + env.Method
	case env.Error != nil:
		what = fmt.Sprintf("error %d%s", env.Error.Code, id)
	default:
		what = "result" + id
	}
	h.logf("%s: %s (%d bytes)", dir, what, len(line))
}
