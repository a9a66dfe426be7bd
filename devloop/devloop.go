// Package devloop is the watch loop of `mcpepoch dev`: it watches a
// project's build sources, waits for a burst of changes to settle (one
// debounce for all files), runs the build as a process group of its own,
// never two at once, and hands each finished build's exit status to a
// recorder. A change during a build cancels it (the whole group, and the
// loop waits for it to be gone) and starts one build of the new state, so
// a burst always ends with one complete build of the last state.
//
// It exists because go-task's watch mode (v3.54) cancels a build for any
// event in a watched directory and does not re-run it, debounces per file,
// notices new directories only by a 5 s rescan and kills only the direct
// child; see the README's go-task notes.
package devloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Options configure Run.
type Options struct {
	// Root is the project root, absolute.
	Root string
	// Watch are doublestar globs relative to Root, slash-separated; a
	// glob starting with "!" excludes what it matches.
	Watch []string
	// Build is the build command, run in Root.
	Build []string
	// Env is added to the environment of the build.
	Env []string
	// Stdout and Stderr receive the build's output (discarded when nil).
	Stdout, Stderr io.Writer
	// Debounce is how long the sources must stay quiet before a build
	// starts (default 200ms).
	Debounce time.Duration
	// Grace is how long a cancelled build's process group gets after
	// SIGTERM before SIGKILL (default 3s).
	Grace time.Duration
	// Poll, when positive, compares the matched files every Poll instead
	// of using the platform's file events (also the fallback when those
	// cannot be set up).
	Poll time.Duration
	// Tree says Watch covers the whole project, so the build's own
	// outputs may be among the watched files. Then what changes while the
	// first build runs (and until it is recorded) is taken as its output
	// and no longer watched (a "watching" event names it), and a change
	// that leaves a file's content as it was (SHA-256, files up to 4 MiB)
	// is dropped, so a build rewriting its output never starts another.
	Tree bool
	// Record is called after every build that ran to its end, with its
	// exit status; the next build waits for it. It is not called for a
	// cancelled build.
	Record func(ctx context.Context, exitCode int)
	// Event receives what happens, from the loop's goroutine.
	Event func(Event)
}

// Event is one thing the loop did or saw.
type Event struct {
	Time time.Time `json:"time"`
	// Type: "watching", "changed", "build_started", "build_finished",
	// "build_cancelled", "watch_error".
	Type     string   `json:"type"`
	Paths    []string `json:"paths,omitempty"`   // changed: the sources that changed (relative)
	Command  []string `json:"command,omitempty"` // build_started
	ExitCode *int     `json:"exitCode,omitempty"`
	Seconds  float64  `json:"seconds,omitempty"` // build_finished, build_cancelled: how long it ran
	Message  string   `json:"message,omitempty"`
}

// skipDirs are never watched: version control, dependency trees and the
// state directories of go-task and mcpepoch (go-task ignores the first
// four too).
var skipDirs = []string{".git", ".hg", "node_modules", ".task", ".mcpepoch", ".venv", "__pycache__"}

func skipDir(name string) bool {
	for _, s := range skipDirs {
		if name == s {
			return true
		}
	}
	return false
}

// editorFile reports whether name is one that editors keep beside a file
// being edited, never a source: vim's swap files (.NAME.swp, .swo, .swx),
// backups (NAME~), Emacs's lock links (.#NAME) and auto-saves (#NAME#).
// Temporary files an editor creates and removes within a save (sed -i's
// sedXXXXXX, vim's 4913) are dropped from the burst instead (burst.send).
func editorFile(name string) bool {
	switch {
	case strings.HasSuffix(name, "~"), strings.HasPrefix(name, ".#"):
		return true
	case len(name) > 2 && strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"):
		return true
	case strings.HasPrefix(name, "."):
		ext := path.Ext(name)
		return ext == ".swp" || ext == ".swo" || ext == ".swx"
	}
	return false
}

// matcher says whether a path relative to the root is a source.
type matcher struct{ include, exclude []string }

func newMatcher(globs []string) (matcher, error) {
	var m matcher
	for _, g := range globs {
		neg := strings.HasPrefix(g, "!")
		g = path.Clean(strings.TrimPrefix(strings.TrimPrefix(g, "!"), "./"))
		if !doublestar.ValidatePattern(g) {
			return m, fmt.Errorf("watch glob %q: not a valid pattern", g)
		}
		if neg {
			m.exclude = append(m.exclude, g)
		} else {
			m.include = append(m.include, g)
		}
	}
	if len(m.include) == 0 {
		return m, errors.New("nothing to watch: no sources and no --watch glob")
	}
	return m, nil
}

func (m matcher) match(rel string) bool {
	if rel == "." || strings.HasPrefix(rel, "../") || editorFile(path.Base(rel)) {
		return false
	}
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if skipDir(part) {
			return false
		}
	}
	hit := false
	for _, g := range m.include {
		if ok, _ := doublestar.Match(g, rel); ok {
			hit = true
			break
		}
	}
	if !hit {
		return false
	}
	for _, g := range m.exclude {
		if ok, _ := doublestar.Match(g, rel); ok {
			return false
		}
	}
	return true
}

// Run watches and builds until ctx ends; then it cancels a running build,
// waits for its process group to be gone and returns nil. The error is for
// options that cannot work (no build command, a bad glob).
func Run(ctx context.Context, o Options) error {
	if len(o.Build) == 0 {
		return errors.New("no build command")
	}
	m, err := newMatcher(o.Watch)
	if err != nil {
		return err
	}
	if o.Debounce <= 0 {
		o.Debounce = 200 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = 3 * time.Second
	}
	if o.Event == nil {
		o.Event = func(Event) {}
	}
	if o.Record == nil {
		o.Record = func(context.Context, int) {}
	}
	events := make(chan Event, 16)
	trigger := make(chan []string, 1)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var lrn *learner
	if o.Tree {
		lrn = &learner{outputs: map[string]bool{}}
	}
	w, err := startWatch(wctx, o, m, lrn, trigger, events)
	if err != nil {
		return err
	}
	o.Event(Event{Time: time.Now(), Type: "watching", Message: w})
	l := &loop{o: o, trigger: trigger, events: events, learn: lrn}
	l.run(ctx)
	return nil
}

// loop runs builds one at a time.
type loop struct {
	o       Options
	trigger chan []string
	events  chan Event
	learn   *learner // nil unless o.Tree
	built   bool     // a build ran to its end
}

func (l *loop) emit(e Event) {
	e.Time = time.Now()
	l.o.Event(e)
}

// drain passes on what the watcher reported.
func (l *loop) drain() {
	for {
		select {
		case e := <-l.events:
			l.o.Event(e)
		default:
			return
		}
	}
}

func (l *loop) run(ctx context.Context) {
	changed := []string{} // the first build runs at once
	for {
		if changed == nil {
			select {
			case <-ctx.Done():
				return
			case e := <-l.events:
				l.o.Event(e)
				continue
			case changed = <-l.trigger:
			}
		}
		l.drain()
		if len(changed) > 0 {
			l.emit(Event{Type: "changed", Paths: changed})
		}
		next, done := l.build(ctx)
		if done {
			return
		}
		changed = next
	}
}

// build runs one build. It returns the changes that cancelled it (nil
// when it ran to its end and was recorded), and done when ctx ended.
func (l *loop) build(ctx context.Context) (next []string, done bool) {
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	if !l.built && l.learn != nil {
		l.learn.start()
	}
	l.emit(Event{Type: "build_started", Command: l.o.Build})
	res := make(chan int, 1)
	go func() { res <- runGroup(bctx, l.o) }()
	for {
		select {
		case code := <-res:
			secs := time.Since(start).Seconds()
			if ctx.Err() != nil {
				l.emit(Event{Type: "build_cancelled", Seconds: secs, Message: "stopped"})
				return nil, true
			}
			l.emit(Event{Type: "build_finished", ExitCode: &code, Seconds: secs})
			l.o.Record(ctx, code)
			if !l.built && l.learn != nil {
				if out := l.learn.stop(); len(out) > 0 {
					l.emit(Event{Type: "watching", Paths: out, Message: "not watched, written by the build: " + strings.Join(out, ", ")})
				}
			}
			l.built = true
			return nil, ctx.Err() != nil
		case e := <-l.events:
			l.o.Event(e)
		case next = <-l.trigger:
			cancel()
			<-res
			l.emit(Event{Type: "build_cancelled", Seconds: time.Since(start).Seconds(), Message: "sources changed during the build"})
			return next, ctx.Err() != nil
		case <-ctx.Done():
			<-res
			l.emit(Event{Type: "build_cancelled", Seconds: time.Since(start).Seconds(), Message: "stopped"})
			return nil, true
		}
	}
}

// runGroup runs the build in a process group of its own and returns its
// exit status (128+N for a death by signal N). When ctx ends, the group
// gets SIGTERM, then SIGKILL after the grace; runGroup returns only once
// the build has exited, and (on Linux) kills what it left in its group.
func runGroup(ctx context.Context, o Options) int {
	cmd := exec.Command(o.Build[0], o.Build[1:]...)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		if o.Stderr != nil {
			fmt.Fprintf(o.Stderr, "mcpepoch dev: %v\n", err)
		}
		return 127
	}
	err := waitBuild(ctx, cmd, o.Grace)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if sig, ok := exitSignal(ee); ok {
			return 128 + sig
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// learner takes what changes during the first build of a tree watch as the
// build's outputs (Options.Tree).
type learner struct {
	mu      sync.Mutex
	active  bool
	outputs map[string]bool
}

func (l *learner) start() {
	l.mu.Lock()
	l.active = true
	l.mu.Unlock()
}

// stop ends the learning and returns the outputs, sorted.
func (l *learner) stop() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = false
	out := make([]string, 0, len(l.outputs))
	for p := range l.outputs {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// output reports whether rel is an output of the build, taking it as one
// while the first build runs; false on a nil learner.
func (l *learner) output(rel string) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active {
		l.outputs[rel] = true
	}
	return l.outputs[rel]
}
