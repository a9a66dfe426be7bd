package notify

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Peers keeps one connection to each live host of a project, so that
// requests sent to every host in turn (the build hook's trees request and
// then its build signal) share them: Broadcast dials anew for each, and
// the dial, the host's accept and its peer check are most of a small
// request's round trip. Requests sent through Peers must be safe to send
// twice (see Broadcast). The zero Peers is not usable; Close releases it.
type Peers struct {
	root  string
	mu    sync.Mutex
	conns map[string]*Conn // by socket path
	// silent holds, by socket path, why a host is not answering: an
	// exchange with it ran out of time before its first line.
	silent map[string]error
}

// NewPeers returns the Peers of the hosts of projectRoot; no host is
// dialled until the first Broadcast.
func NewPeers(projectRoot string) *Peers {
	return &Peers{root: projectRoot, conns: map[string]*Conn{}, silent: map[string]error{}}
}

// Connect dials every host of the project that p has no connection to
// yet, as Broadcast would, and keeps the connections for Broadcast,
// sending nothing: a caller dials while it does other work, before it
// knows what to send. A host that cannot be dialled is left to Broadcast,
// which dials it again.
func (p *Peers) Connect(ctx context.Context) {
	paths, err := Hosts(p.root)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, path := range paths {
		p.mu.Lock()
		have := p.conns[path] != nil
		p.mu.Unlock()
		if have {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, _, _ := dialOnce(ctx, path); c != nil {
				p.keep(path, c, nil)
			}
		}()
	}
	wg.Wait()
}

// Broadcast is the package's Broadcast over p's connections: req goes to
// every host of the project (Hosts, listed again at each call)
// concurrently, with one Result per live host in the order of Hosts. A
// host reached by an earlier call gets req over the same connection; one
// new since then is dialled as Broadcast dials (a dead host's socket
// removed, a vanished one left out). When a kept connection fails other
// than by ctx or by the host's own answer (the host closed it: it timed
// out idle, or exited), req is sent once more over a new dial, so a host
// may get it twice.
func (p *Peers) Broadcast(ctx context.Context, req Request) []Result {
	return fanOut(ctx, p.root, req, p.send)
}

// send is one exchange of Broadcast with the host at path.
func (p *Peers) send(ctx context.Context, path string, req Request) (Result, bool) {
	start := time.Now()
	p.mu.Lock()
	c := p.conns[path]
	delete(p.conns, path)
	silent := p.silent[path]
	p.mu.Unlock()
	if silent != nil {
		return Result{Socket: path, Err: silent}, true
	}
	if c != nil {
		r := Result{Socket: path}
		r.Response, r.Err = c.Do(ctx, req)
		if r.Err == nil || answered(r.Err) || ctx.Err() != nil || errors.Is(r.Err, context.DeadlineExceeded) {
			p.done(start, path, c, req, r.Err)
			return r, true
		}
		c.Close()
	}
	c, r, live := dialOnce(ctx, path)
	if c == nil {
		return r, live
	}
	r.Response, r.Err = c.Do(ctx, req)
	p.done(start, path, c, req, r.Err)
	return r, true
}

// done ends an exchange over c, begun at start: c is kept (keep), and a
// host that ran out of time is remembered as not answering.
func (p *Peers) done(start time.Time, path string, c *Conn, req Request, err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		na, ok := errors.AsType[*NotAnsweringError](err)
		if !ok {
			na = &NotAnsweringError{Socket: path, Type: req.Type, Wait: time.Since(start).Round(100 * time.Millisecond)}
		}
		p.mu.Lock()
		if p.silent != nil {
			p.silent[path] = na
		}
		p.mu.Unlock()
	}
	p.keep(path, c, err)
}

// answered reports whether err is the host's own answer, after which the
// connection stays usable.
func answered(err error) bool {
	var re *RemoteError
	var ve *VersionError
	return errors.As(err, &re) || errors.As(err, &ve)
}

// keep keeps c for the next request when the exchange that ended with err
// left it usable, else closes it.
func (p *Peers) keep(path string, c *Conn, err error) {
	if err != nil && !answered(err) {
		c.Close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close() // closed meanwhile
		return
	}
	p.conns[path] = c
}

// Close closes every connection p keeps.
func (p *Peers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
