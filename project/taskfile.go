package project

import (
	"fmt"

	"github.com/go-task/task/v3/taskfile/ast"
	"go.yaml.in/yaml/v3"
)

// TaskfileNames are the names go-task looks for in a directory, in its
// order (go-task v3.54: taskfile.DefaultTaskfiles).
var TaskfileNames = []string{
	"Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "taskfile.yaml",
	"Taskfile.dist.yml", "taskfile.dist.yml", "Taskfile.dist.yaml", "taskfile.dist.yaml",
}

// Taskfile is the root Taskfile, as go-task's taskfile/ast decodes it
// (included Taskfiles are named, not read).
type Taskfile struct {
	Path     string    // relative to the project root
	Tasks    []*Task   // in file order
	Includes []Include // in file order
	// AST is the whole decoded Taskfile, for what Task does not carry.
	AST *ast.Taskfile
	// Doc is the YAML document node the AST was decoded from: its line
	// and column positions are where an edit of the text goes.
	Doc *yaml.Node
	// Src is the file's content as read.
	Src []byte
}

// Include is one entry of the Taskfile's includes.
type Include struct {
	Namespace string
	Taskfile  string // as written
}

// Task is one task of the root Taskfile.
type Task struct {
	Name      string
	Line      int      // 1-based line of the task's key
	Sources   []string // globs as written; an exclude is "!glob"
	Generates []string
	Cmds      []Cmd
	Watch     bool // watch: true
	// DroppedDefers are the 1-based lines of `cmds` entries written as a
	// mapping with both `cmd:` and `defer: true`: go-task v3.54 reads
	// `defer: true` as a deferred command "true" and silently drops the
	// `cmd:` (its Cmd.UnmarshalYAML).
	DroppedDefers []int
}

// Cmd is one entry of a task's cmds.
type Cmd struct {
	Cmd   string // the command, "" for a task call
	Task  string // the called task, "" for a command
	Defer bool
	Line  int // 1-based line of the entry; 0 when not known
}

// Task returns the task called name, or nil.
func (tf *Taskfile) Task(name string) *Task {
	for _, t := range tf.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (p *Project) readTaskfile() error {
	rel := p.firstExisting(TaskfileNames...)
	if rel == "" {
		return nil
	}
	b, err := p.readFile(rel)
	if err != nil {
		return err
	}
	tf, err := ParseTaskfile(rel, b)
	if err != nil {
		return p.fileError(rel, err)
	}
	p.Taskfile = tf
	return nil
}

// ParseTaskfile decodes the Taskfile src, read from rel, with go-task's own
// taskfile/ast.
func ParseTaskfile(rel string, src []byte) (*Taskfile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if n := expandedNodes(&doc, map[*yaml.Node]int{}); n > maxExpandedNodes {
		return nil, fmt.Errorf("more than %d YAML nodes with its aliases expanded: refused (an alias bomb?)", maxExpandedNodes)
	}
	var tf ast.Taskfile
	if err := doc.Decode(&tf); err != nil {
		return nil, err
	}
	out := &Taskfile{Path: rel, AST: &tf, Doc: &doc, Src: src}
	if tf.Includes != nil {
		for ns, inc := range tf.Includes.All() {
			out.Includes = append(out.Includes, Include{Namespace: ns, Taskfile: inc.Taskfile})
		}
	}
	lines := taskLines(&doc)
	if tf.Tasks != nil {
		for name, t := range tf.Tasks.All(nil) {
			task := &Task{Name: name, Watch: t.Watch, Line: lines[name].line, DroppedDefers: lines[name].dropped}
			task.Sources = globs(t.Sources)
			task.Generates = globs(t.Generates)
			for i, c := range t.Cmds {
				cmd := Cmd{Cmd: c.Cmd, Task: c.Task, Defer: c.Defer}
				if cl := lines[name].cmds; len(cl) == len(t.Cmds) {
					cmd.Line = cl[i]
				}
				task.Cmds = append(task.Cmds, cmd)
			}
			out.Tasks = append(out.Tasks, task)
		}
	}
	if tf.Version == nil {
		return nil, fmt.Errorf("no version: go-task needs version: '3'")
	}
	return out, nil
}

func globs(gs []*ast.Glob) []string {
	var out []string
	for _, g := range gs {
		if g.Negate {
			out = append(out, "!"+g.Glob)
		} else {
			out = append(out, g.Glob)
		}
	}
	return out
}

type taskPos struct {
	line    int
	dropped []int
	cmds    []int // line of each cmds entry
}

// taskLines finds, in the YAML document, the line of each task's key and
// the cmds entries that go-task would drop (see Task.DroppedDefers).
func taskLines(doc *yaml.Node) map[string]taskPos {
	out := map[string]taskPos{}
	tasks := MapValue(doc, "tasks")
	if tasks == nil || tasks.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(tasks.Content); i += 2 {
		key, val := tasks.Content[i], tasks.Content[i+1]
		pos := taskPos{line: key.Line}
		if cmds := MapValue(val, "cmds"); cmds != nil && cmds.Kind == yaml.SequenceNode {
			for _, c := range cmds.Content {
				pos.cmds = append(pos.cmds, c.Line)
				d := MapValue(c, "defer")
				if MapValue(c, "cmd") != nil && d != nil && d.Kind == yaml.ScalarNode {
					pos.dropped = append(pos.dropped, c.Line)
				}
			}
		}
		out[key.Value] = pos
	}
	return out
}

// MapValue returns the value of key in mapping node n (or in the mapping a
// document node holds), or nil.
func MapValue(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// maxExpandedNodes bounds a Taskfile's YAML nodes, each alias counted as
// the nodes it stands for. go.yaml.in/yaml refuses excessive aliasing per
// decoder, but go-task decodes each variable with a decoder of its own,
// so a list aliased by thousands of variables passes each check and
// expands to billions of nodes together.
const maxExpandedNodes = 1_000_000

// expandedNodes counts n's nodes with aliases expanded, each alias target
// counted once in seen and reused (an alias cannot refer to itself: the
// parser refuses that). It stops counting past maxExpandedNodes.
func expandedNodes(n *yaml.Node, seen map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if c, ok := seen[n]; ok {
		return c
	}
	seen[n] = 0 // a cycle counts nothing more
	c := 1
	if n.Kind == yaml.AliasNode {
		c += expandedNodes(n.Alias, seen)
	}
	for _, k := range n.Content {
		if c > maxExpandedNodes {
			break
		}
		c += expandedNodes(k, seen)
	}
	seen[n] = c
	return c
}
