package host

import (
	"path/filepath"
	"sync"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// auditor appends the host's events to the project's audit log,
// .mcpepoch/audit.jsonl, shared by every host of the project (package audit
// serializes writers with a lock). Events are queued in the order the host
// decides them (under h.mu) and written by one goroutine, so a tool call
// does not wait for an fsync. A host killed with SIGKILL can lose the queued
// tail; what reached the file stays verifiable.
type auditor struct {
	log  *audit.Log
	logf func(string, ...any)

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []audit.Event
	closed bool
	done   chan struct{}
}

func openAuditor(dir string, logf func(string, ...any)) (*auditor, error) {
	p := layout.Audit(dir)
	if err := layout.MkdirAll(filepath.Dir(p)); err != nil {
		return nil, err
	}
	l, err := audit.Open(p, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range l.Recoveries() {
		logf("audit log %s: recovered after a crash: %v", p, r)
	}
	a := &auditor{log: l, logf: logf, done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	go a.loop()
	return a, nil
}

// event queues one record. Fields must hold no secret: names and digests
// only (audit package doc).
func (a *auditor) event(typ string, ep epoch.Epoch, run epoch.RunID, fields map[string]any) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if !a.closed {
		a.queue = append(a.queue, audit.Event{Type: typ, Epoch: string(ep), Run: string(run), Fields: fields})
		a.cond.Signal()
	}
	a.mu.Unlock()
}

func (a *auditor) loop() {
	defer close(a.done)
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.closed {
			a.cond.Wait()
		}
		q := a.queue
		a.queue = nil
		closed := a.closed
		a.mu.Unlock()
		for _, ev := range q {
			if _, err := a.log.Append(ev); err != nil {
				a.logf("audit log: %s record lost: %v", ev.Type, err)
			}
		}
		if closed && len(q) == 0 {
			return
		}
	}
}

// close writes what is queued and closes the log.
func (a *auditor) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	a.cond.Signal()
	a.mu.Unlock()
	<-a.done
	a.log.Close()
}
