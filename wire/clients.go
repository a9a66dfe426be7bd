package wire

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Client is an MCP client whose configuration init writes.
type Client string

// The clients init knows. Claude Desktop's file is per user, not per
// project, so it is written only when asked for.
const (
	ClaudeCode    Client = "claude-code"    // <root>/.mcp.json
	VSCode        Client = "vscode"         // <root>/.vscode/mcp.json
	Cursor        Client = "cursor"         // <root>/.cursor/mcp.json
	ClaudeDesktop Client = "claude-desktop" // <user config dir>/Claude/claude_desktop_config.json
)

// Clients are all the clients, in the order their files are shown.
var Clients = []Client{ClaudeCode, VSCode, Cursor, ClaudeDesktop}

// DefaultClients are the clients whose config lives in the project.
var DefaultClients = []Client{ClaudeCode, VSCode, Cursor}

// ConfigPath returns where c reads its servers from: a path relative to
// the project root, or for Claude Desktop an absolute one under
// userConfigDir (os.UserConfigDir: ~/.config on Linux, ~/Library/Application
// Support on macOS).
func (c Client) ConfigPath(userConfigDir string) string {
	switch c {
	case ClaudeCode:
		return ".mcp.json"
	case VSCode:
		return filepath.Join(".vscode", "mcp.json")
	case Cursor:
		return filepath.Join(".cursor", "mcp.json")
	case ClaudeDesktop:
		return filepath.Join(userConfigDir, "Claude", "claude_desktop_config.json")
	}
	return ""
}

// ServersKey is the key of the servers object in c's file: "servers" for
// VS Code, "mcpServers" for the others.
func (c Client) ServersKey() string {
	if c == VSCode {
		return "servers"
	}
	return "mcpServers"
}

// ParseClient returns the client called name.
func ParseClient(name string) (Client, error) {
	for _, c := range Clients {
		if string(c) == name {
			return c, nil
		}
	}
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown client %q: want one of %s", name, strings.Join(names, ", "))
}

// HostArgs are the arguments a client passes to mcpepoch to serve the
// project at root: the host reads the server's command from mcpepoch.toml.
func HostArgs(root string) []string { return []string{"host", "--dir", root} }

// mergeClient returns the client config file old (nil when absent) with
// the server entry for the project: command is the absolute path of
// mcpepoch. Every other key and server is kept, in its order; an entry that
// launched the server directly, or the project's host, is updated in place.
// The result is old itself when nothing needs to change.
func mergeClient(c Client, old []byte, label, root, command string, direct []string) ([]byte, string, error) {
	doc := newObject()
	if len(old) > 0 {
		var err error
		if doc, err = parseObject(old); err != nil {
			return nil, "", fmt.Errorf("not JSON that init can merge into (%v): add the server by hand", err)
		}
	}
	servers, err := doc.child(c.ServersKey())
	if err != nil {
		return nil, "", err
	}
	name := label
	if _, ok := servers.get(label); !ok {
		for _, k := range servers.keys {
			if e, ok := servers.vals[k].(*object); ok && (launches(e, direct) || servesRoot(e, root)) {
				name = k
				break
			}
		}
	}
	entry, err := servers.child(name)
	if err != nil {
		return nil, "", fmt.Errorf("server %q: %v", name, err)
	}
	before := string(encode(entry))
	if c == ClaudeCode || c == VSCode {
		entry.set("type", "stdio")
	}
	entry.set("command", command)
	args := []any{}
	for _, a := range HostArgs(root) {
		args = append(args, a)
	}
	entry.set("args", args)
	if string(encode(entry)) == before && len(old) > 0 {
		return old, name, nil
	}
	return encode(doc), name, nil
}

// strs returns v as strings when it is a JSON array of strings.
func strs(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// launches reports whether the entry runs the command direct itself.
func launches(e *object, direct []string) bool {
	cmd, _ := e.get("command")
	args, _ := e.get("args")
	s, _ := cmd.(string)
	as, _ := strs(args)
	if args == nil {
		as = []string{}
	}
	got := append([]string{s}, as...)
	return len(direct) > 0 && slices.Equal(got, direct)
}

// servesRoot reports whether the entry runs mcpepoch host for root.
func servesRoot(e *object, root string) bool {
	cmd, _ := e.get("command")
	s, _ := cmd.(string)
	args, _ := e.get("args")
	as, _ := strs(args)
	if !strings.Contains(filepath.Base(s), "mcpepoch") || !slices.Contains(as, "host") {
		return false
	}
	i := slices.Index(as, "--dir")
	return i >= 0 && i+1 < len(as) && filepath.Clean(as[i+1]) == root
}
