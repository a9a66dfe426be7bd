package wire

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/project"
)

// HookDefer is the cmds entry that runs the hook after the build task,
// failed or not: a defer of the record task of mcpepoch.Taskfile.yml.
// EXIT_CODE is set in deferred commands only when the task failed.
const HookDefer = `- defer: {task: mcpepoch:record, vars: {EXIT_CODE: '{{.EXIT_CODE | default 0}}'}}`

// DevCmd is the dev task's command: the watch loop of mcpepoch dev.
const DevCmd = `'{{.MCPEPOCH | default "mcpepoch"}} dev'`

// ManifestGenerate is in the build task's generates so that go-task never
// calls the build up to date before a build was recorded: a hook that
// failed once would otherwise not run again until a source changed.
const ManifestGenerate = ".mcpepoch/manifest.toml"

// StateExclude keeps the state directory out of a sources glob that
// reaches it.
const StateExclude = ".mcpepoch/**"

// taskfileEdit is the Taskfile of a project being wired.
type taskfileEdit struct {
	tf    *project.Taskfile
	t     *text
	top   *yaml.Node // the document's mapping
	unit  string     // one level of indentation
	notes []string
}

// editTaskfile returns the Taskfile with the include, the hook in the
// build task (created when missing), its sources and generates, and the
// dev task.
func editTaskfile(p *project.Project, pl project.Plan, o Options) ([]byte, []string, error) {
	tf := p.Taskfile
	e := &taskfileEdit{tf: tf, t: newText(tf.Src), unit: "  "}
	if tf.Doc != nil && len(tf.Doc.Content) == 1 {
		e.top = tf.Doc.Content[0]
	}
	if e.top == nil || e.top.Kind != yaml.MappingNode || e.top.Style&yaml.FlowStyle != 0 {
		return nil, nil, fmt.Errorf("%s: the top level is not a block mapping: wire it by hand (%s template mcpepoch.Taskfile.yml)", tf.Path, selfcmd.Name())
	}
	tasksKey, tasks := pair(e.top, "tasks")
	if tasks == nil || tasks.Kind != yaml.MappingNode || tasks.Style&yaml.FlowStyle != 0 || len(tasks.Content) == 0 {
		return nil, nil, fmt.Errorf("%s: tasks is not a block mapping: wire it by hand (%s template mcpepoch.Taskfile.yml)", tf.Path, selfcmd.Name())
	}
	e.unit = strings.Repeat(" ", max(tasks.Content[0].Column-1, 1))
	head := headLine(tasksKey)
	if err := e.include(head); err != nil {
		return nil, nil, err
	}
	if o.Hook != "" && o.Hook != "mcpepoch" {
		if err := e.hookVar(head, o.Hook); err != nil {
			return nil, nil, err
		}
	}
	if err := e.build(tasks, pl); err != nil {
		return nil, nil, err
	}
	e.dev(tasks)
	if !e.t.changed() {
		return tf.Src, nil, nil
	}
	return e.t.bytes(), e.notes, nil
}

// pair returns the key and value nodes of key in mapping m.
func pair(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// headLine is the first line of a key with the comment lines above it.
func headLine(key *yaml.Node) int {
	if key.HeadComment == "" {
		return key.Line
	}
	return key.Line - strings.Count(key.HeadComment, "\n") - 1
}

func block(n *yaml.Node, kind yaml.Kind) bool {
	return n != nil && n.Kind == kind && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0
}

func (e *taskfileEdit) include(head int) error {
	for _, inc := range e.tf.Includes {
		if strings.Contains(path.Base(inc.Taskfile), "mcpepoch") {
			return nil
		}
	}
	line := "mcpepoch: ./" + MCPEPOCHTaskfile
	key, incs := pair(e.top, "includes")
	switch {
	case key == nil:
		e.t.insert(head, "includes:", e.unit+line, "")
	case block(incs, yaml.MappingNode):
		first := incs.Content[0]
		e.t.insert(first.Line, strings.Repeat(" ", first.Column-1)+line)
	default:
		return fmt.Errorf("%s: includes is not a block mapping: add %q to it by hand", e.tf.Path, line)
	}
	return nil
}

// hookVar sets MCPEPOCH, the command the hook and the dev task run, unless
// the Taskfile sets it already.
func (e *taskfileEdit) hookVar(head int, hook string) error {
	inner := fmt.Sprintf("{{.MCPEPOCH | default %q}}", shellJoin([]string{hook}))
	line := "MCPEPOCH: '" + strings.ReplaceAll(inner, "'", "''") + "'"
	key, vars := pair(e.top, "vars")
	switch {
	case key == nil:
		e.t.insert(head, "vars:", e.unit+line, "")
	case block(vars, yaml.MappingNode):
		if k, _ := pair(vars, "MCPEPOCH"); k != nil {
			return nil
		}
		first := vars.Content[0]
		e.t.insert(first.Line, strings.Repeat(" ", first.Column-1)+line)
	default:
		return fmt.Errorf("%s: vars is not a block mapping: add %s to it by hand", e.tf.Path, line)
	}
	return nil
}

// tasksEnd is the line after the last line of the tasks mapping's content.
func (e *taskfileEdit) tasksEnd(tasks *yaml.Node) int {
	last := tasks.Content[len(tasks.Content)-2]
	return e.t.blockEnd(last.Line, last.Column-1) + 1
}

// taskText is a new task called name, indented as the Taskfile's tasks.
func (e *taskfileEdit) taskText(name string, body ...string) []string {
	out := []string{"", e.unit + name + ":"}
	for _, l := range body {
		out = append(out, e.unit+e.unit+l)
	}
	return out
}

func (e *taskfileEdit) build(tasks *yaml.Node, pl project.Plan) error {
	task := e.tf.Task(pl.Build.Target)
	sources := slices.Concat(pl.Sources, []string{"mcpepoch.toml"})
	sources = slices.Compact(sources)
	if task == nil {
		body := []string{"desc: Build the server and record the build for mcpepoch", "sources:"}
		for _, s := range sources {
			if x, ok := strings.CutPrefix(s, "!"); ok {
				body = append(body, e.unit+"- exclude: "+quoteYAML(x))
				continue
			}
			body = append(body, e.unit+"- "+quoteYAML(s))
		}
		body = append(body, "generates:")
		if pl.Entry != "" && pl.Build.Command != nil {
			body = append(body, e.unit+"- "+quoteYAML(pl.Entry))
		}
		body = append(body, e.unit+"- "+ManifestGenerate, "cmds:", e.unit+HookDefer)
		if pl.Build.Command != nil {
			body = append(body, e.unit+"- "+quoteYAML(shellJoin(pl.Build.Command)))
		}
		e.t.insert(e.tasksEnd(tasks), e.taskText(pl.Build.Target, body...)...)
		return nil
	}
	_, val := pair(tasks, pl.Build.Target)
	if !block(val, yaml.MappingNode) {
		return fmt.Errorf("%s:%d: task %s is not a block mapping: add the hook by hand: cmds: %s", e.tf.Path, task.Line, task.Name, HookDefer)
	}
	cmdsKey, cmds := pair(val, "cmds")
	var flow []string
	switch {
	case block(cmds, yaml.SequenceNode):
		if err := e.hook(task, cmds); err != nil {
			return err
		}
	case len(task.DroppedDefers) == 0:
		flow = e.flowCmds(cmdsKey, cmds)
		if flow != nil {
			break
		}
		fallthrough
	default:
		return fmt.Errorf("%s:%d: task %s has no block list of cmds: add the hook by hand: cmds: %s", e.tf.Path, task.Line, task.Name, HookDefer)
	}
	if flow != nil {
		// Last, so that what the lists below insert before this line stays
		// before it (text applies later edits of a line first).
		defer func() {
			lines := []string{strings.TrimRight(e.t.line(cmdsKey.Line)[:cmds.Column-1], " ")}
			dash := strings.Repeat(" ", cmdsKey.Column-1) + e.unit
			if !e.tf.HasHook(task) {
				lines = append(lines, dash+HookDefer)
			}
			for _, it := range flow {
				if isRecord(it) {
					e.notes = append(e.notes, fmt.Sprintf("%s:%d: removed the hook that would not run after a failed build; the defer replaces it", e.tf.Path, cmds.Line))
					continue
				}
				lines = append(lines, dash+"- "+it)
			}
			e.t.replace(cmdsKey.Line, 1, lines...)
			e.notes = append(e.notes, fmt.Sprintf("%s:%d: the cmds of task %s are now a block list, with the hook first", e.tf.Path, cmdsKey.Line, task.Name))
		}()
	}
	childIndent := strings.Repeat(" ", cmdsKey.Column-1)
	at := headLine(cmdsKey)
	var want []string
	if k, _ := pair(val, "sources"); k == nil {
		want = sources
	} else {
		if !slices.Contains(task.Sources, "mcpepoch.toml") {
			want = append(want, "mcpepoch.toml")
		}
		if reaches(task.Sources) {
			want = append(want, "exclude: "+StateExclude)
		}
	}
	e.list(val, "sources", want, childIndent, at, task)
	var gen []string
	if !slices.Contains(task.Generates, ManifestGenerate) {
		gen = []string{ManifestGenerate}
	}
	if k, _ := pair(val, "generates"); k == nil && pl.Entry != "" && pl.Build.Command != nil {
		gen = append([]string{pl.Entry}, gen...)
	}
	e.list(val, "generates", gen, childIndent, at, task)
	return nil
}

// hook puts the hook first in cmds, where go-task registers it before the
// build can fail, and takes out the forms that miss a failed build: a
// plain command after the build, and a cmd: with defer: true (go-task
// drops the command).
func (e *taskfileEdit) hook(task *project.Task, cmds *yaml.Node) error {
	if e.tf.HasHook(task) && len(task.DroppedDefers) == 0 {
		return nil
	}
	first := cmds.Content[0]
	dash := indentOf(e.t.line(first.Line))
	if !e.tf.HasHook(task) {
		e.t.insert(first.Line, dash+HookDefer)
	}
	for i, c := range cmds.Content {
		drop := slices.Contains(task.DroppedDefers, c.Line) && strings.Contains(nodeText(c), "record")
		if plain := c.Kind == yaml.ScalarNode && isRecord(c.Value); !drop && !plain {
			continue
		}
		end := e.t.blockEnd(c.Line, len(dash))
		if i+1 < len(cmds.Content) {
			end = min(end, cmds.Content[i+1].Line-1)
		}
		e.t.replace(c.Line, end-c.Line+1)
		e.notes = append(e.notes, fmt.Sprintf("%s:%d: removed the hook that would not run after a failed build; the defer replaces it", e.tf.Path, c.Line))
	}
	return nil
}

// flowCmds returns the items of a cmds list written in flow style on the
// line of its key (cmds: [go build ., {task: gen}]) as written, or nil
// when it is not one: empty, spread over lines, or with anything after
// the closing bracket (a comment). The caller writes them again as a
// block list with the hook first.
func (e *taskfileEdit) flowCmds(key, cmds *yaml.Node) []string {
	if key == nil || cmds == nil || cmds.Kind != yaml.SequenceNode || cmds.Style&yaml.FlowStyle == 0 ||
		len(cmds.Content) == 0 || cmds.Line != key.Line {
		return nil
	}
	l := strings.TrimRight(e.t.line(cmds.Line), " \t")
	last := cmds.Content[len(cmds.Content)-1]
	if !strings.HasSuffix(l, "]") || len(l) < last.Column || strings.Contains(l[last.Column-1:], " #") || strings.Contains(l[last.Column-1:], "\t#") {
		return nil // a comment may hold the bracket: not worth guessing
	}
	var items []string
	for i, c := range cmds.Content {
		end := len(l) - 1
		if i+1 < len(cmds.Content) {
			end = cmds.Content[i+1].Column - 1
		}
		if c.Line != cmds.Line || c.Column-1 >= end || end > len(l) {
			return nil
		}
		it := strings.TrimRight(strings.TrimSpace(l[c.Column-1:end]), ",")
		if it = strings.TrimSpace(it); it == "" {
			return nil
		}
		items = append(items, it)
	}
	return items
}

// isRecord reports whether a command runs mcpepoch record.
func isRecord(cmd string) bool {
	return strings.Contains(cmd, "mcpepoch") && strings.Contains(cmd, "record")
}

// nodeText joins the scalar values under n.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, nodeText(c))
	}
	return strings.Join(parts, " ")
}

// list adds items to the list under key in the task's mapping val,
// creating the key (before line at, indented by indent) when it is absent.
func (e *taskfileEdit) list(val *yaml.Node, key string, items []string, indent string, at int, task *project.Task) {
	if len(items) == 0 {
		return
	}
	k, seq := pair(val, key)
	switch {
	case k == nil:
		lines := []string{indent + key + ":"}
		for _, it := range items {
			lines = append(lines, indent+e.unit+"- "+quoteItem(it))
		}
		e.t.insert(at, lines...)
	case block(seq, yaml.SequenceNode):
		last := seq.Content[len(seq.Content)-1]
		dash := indentOf(e.t.line(last.Line))
		end := e.t.blockEnd(last.Line, len(dash))
		var lines []string
		for _, it := range items {
			lines = append(lines, dash+"- "+quoteItem(it))
		}
		e.t.insert(end+1, lines...)
	case seq.Kind == yaml.SequenceNode && seq.Style&yaml.FlowStyle != 0 && strings.Count(e.t.line(seq.Line), "]") == 1 &&
		(len(seq.Content) == 0 || seq.Content[len(seq.Content)-1].Line == seq.Line):
		l := e.t.line(seq.Line)
		i := strings.LastIndexByte(l, ']')
		var add []string
		for _, it := range items {
			add = append(add, flowItem(it))
		}
		sep := ", "
		if len(seq.Content) == 0 {
			sep = ""
		}
		e.t.replace(seq.Line, 1, strings.TrimRight(l[:i], " ")+sep+strings.Join(add, ", ")+l[i:])
	default:
		e.notes = append(e.notes, fmt.Sprintf("%s:%d: add %s to the %s of task %s by hand", e.tf.Path, seq.Line, strings.Join(items, ", "), key, task.Name))
	}
}

// dev writes the dev task, or rewrites one that is something else (go-task's
// own watch mode, most likely), so that task dev runs mcpepoch dev.
func (e *taskfileEdit) dev(tasks *yaml.Node) {
	body := []string{"desc: Rebuild on every change and restart the server (mcpepoch dev)", "interactive: true", "cmds:", e.unit + "- " + DevCmd}
	task := e.tf.Task("dev")
	if task == nil {
		e.t.insert(e.tasksEnd(tasks), e.taskText("dev", body...)...)
		return
	}
	if IsDevTask(task) {
		return
	}
	key, _ := pair(tasks, "dev")
	end := e.t.blockEnd(key.Line, key.Column-1)
	e.t.replace(key.Line, end-key.Line+1, e.taskText("dev", body...)[1:]...)
	e.notes = append(e.notes, fmt.Sprintf("%s:%d: the dev task now runs mcpepoch dev instead of go-task's watch mode", e.tf.Path, key.Line))
}

// IsDevTask reports whether t runs mcpepoch dev, and not under go-task's
// watch mode.
func IsDevTask(t *project.Task) bool {
	if t.Watch {
		return false
	}
	for _, c := range t.Cmds {
		if strings.Contains(c.Cmd, "mcpepoch") && strings.HasSuffix(strings.TrimSpace(c.Cmd), " dev") {
			return true
		}
	}
	return false
}

// StateFiles are paths under .mcpepoch/ that a sources glob must not
// match: every kind of file mcpepoch writes there.
var StateFiles = []string{".mcpepoch/manifest.toml", ".mcpepoch/manifest.lock", ".mcpepoch/audit.jsonl",
	".mcpepoch/builds.jsonl", ".mcpepoch/hosts/x.json", ".mcpepoch/grants/x.json", ".mcpepoch/cache/files", ".mcpepoch/sock/x.sock"}

// reaches reports whether the sources (globs, "!glob" for an exclude)
// match a file under .mcpepoch/ that no exclude takes out again.
func reaches(sources []string) bool {
	_, ok := Reaching(sources)
	return ok
}

// Reaching returns the first source glob that matches a file under
// .mcpepoch/ with no exclude taking it out.
func Reaching(sources []string) (string, bool) {
	for _, f := range StateFiles {
		hit := ""
		for _, s := range sources {
			if g, ok := strings.CutPrefix(s, "!"); ok {
				if m, _ := doublestar.Match(path.Clean(strings.TrimPrefix(g, "./")), f); m {
					hit = ""
				}
				continue
			}
			if m, _ := doublestar.Match(path.Clean(strings.TrimPrefix(s, "./")), f); m {
				hit = s
			}
		}
		if hit != "" {
			return hit, true
		}
	}
	return "", false
}

// quoteItem writes a list item: "exclude: GLOB" as a mapping, anything
// else as a scalar.
func quoteItem(s string) string {
	if g, ok := strings.CutPrefix(s, "exclude: "); ok {
		return "exclude: " + quoteYAML(g)
	}
	return quoteYAML(s)
}

func flowItem(s string) string {
	if g, ok := strings.CutPrefix(s, "exclude: "); ok {
		return "{exclude: " + quoteYAML(g) + "}"
	}
	return quoteYAML(s)
}

// quoteYAML returns s as a plain YAML scalar when that reads back as s,
// else single-quoted.
func quoteYAML(s string) string {
	var back map[string]string
	if s != "" && !strings.ContainsAny(s, "{}[],&*#?|<>=!%@`'\"") && !strings.HasPrefix(s, "- ") &&
		yaml.Unmarshal([]byte("x: "+s), &back) == nil && back["x"] == s {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// shellJoin joins words into a shell command line, quoting what needs it.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
