package host

// Goroutines and locks of a Host.
//
// # Goroutines, in start order (Run stops them in the reverse order)
//
//  1. The audit writer (auditlog.go): appends what the host decided, in
//     the order it was decided, when the goroutine that decided it did
//     not (a tools/call's record is written by the goroutine that
//     forwards it), and syncs what was written, in groups. Closed last:
//     after it, nothing records.
//  2. The client writer (queue.go, h.out): writes the client's stdout.
//     Closed after the child is stopped and the run is ended, with up to
//     a second to flush.
//  3. Per epoch, the child's goroutines (child.go, supervise.go): its
//     stdin writer, its stdout reader (calls fromChild), its reaper
//     (calls childExited), and its guard process (guard.go, which kills
//     the group if the host dies without stopping it); around them the
//     crash recovery loop (recover.go recover), the start after an idle
//     exit (wakeLocked), the one-time /proc observation, the process
//     tree watch of allow_self_reload (selfreload.go watchTree, ends
//     with the child), its credentials broker (credentials.go: the
//     socket's accept loop and one goroutine per request, until the child
//     is reaped or h.ctx ends; a request takes h.mu to decide and again
//     to hand over, never while a source is read), and the catalog fetches (at most one re-list after
//     a server's list_changed runs; a restart cancels it first, before it
//     takes restartMu). Stopped by stopChild, which takes restartMu so
//     that no restart is half done. Once the host gave up on a server,
//     watchWhileDown looks at the hashed files every second until a
//     restart succeeds or h.ctx ends. The orphan reaper of a subreaper
//     host (reaper_linux.go) is process-wide and outlives Run.
//  4. The socket server (notify.Listener.Serve with api.go's handlers):
//     build signals, restart, status, review, approve, revoke. It stops
//     accepting when h.ctx ends, and Run waits until its handlers have
//     returned before it stops the child: every socket request finishes
//     before the audit writer closes.
//     The manifest watch (manifestwatch.go) starts with it: a new build
//     id in the run manifest is a build signal. So does the revoke watch
//     (revokefile.go): a request file for a live grant ends it. Run waits
//     for both to end with h.ctx, before the child is stopped.
//     The tree watcher (trees.go, package treewatch) starts before the
//     first child and reads file notifications on the identity's trees;
//     Run closes it after the socket server's handlers returned.
//     Per approval asked through the client (elicit.go), runAsk opens
//     the page, asks, and waits for the page, the client's answer,
//     approval_wait or the ask's end (an epoch change, a grant, the
//     client's cancellation), each handled under h.mu; it ends with h.ctx.
//  5. The client reader (readLinesMore on stdin, calls fromClient): ends
//     the host when stdin closes. A read cannot be interrupted, so Run
//     does not wait for it; what it reads after the child is stopped is
//     answered server_unavailable and records nothing.
//
// # Locks
//
// restartMu orders what replaces or re-lists the child: restart, the
// first catalog fetch, re-lists after a server's own list_changed, crash
// recovery and stopChild. It is held across slow work (identity,
// stopping a process group, tools/list) and is always taken before h.mu.
//
// h.mu guards the state machine, the client side, the server side, the
// catalog, the grants and the grants policy with what the host knows of
// mcpepoch.toml (policy, config: configwatch.go reads the file before
// taking it) (the groups of Host's fields). Every client and
// server message takes it, so it is held only to decide and to queue:
//
//   - Never block under h.mu: no read of a file another process can
//     replace (the manifest, /proc: Status reads them after releasing
//     it), no wait on a peer (a child's answer, the socket, a process
//     exit), no restartMu. One file is read under it: the audit log's
//     head, when a renewal is prepared (renewal.go), through
//     safefile (regular files only, opened non-blocking, 4 KiB at most),
//     so that the renewal's proposal names the head as its
//     renewal_prepared record is queued; audit.Log.Head would wait on
//     the writer's fsync instead.
//   - Writes under h.mu go to queues that never block: toClient
//     (h.out), child.send (the child's stdin queue) and h.audit. The
//     order they are queued in is the order the host decided, so the
//     audit log and the client see one sequence. One file write is made
//     under it: a tools/call's tool_called record, with what was queued
//     before it, appended by write(2) (audit.Log.TryWrite) when the
//     log's lock is at hand without waiting (this host holds it, or
//     no one does); otherwise the call waits in its child's stdin queue
//     for the audit writer, never under h.mu. A reader that has more
//     lines of one read to handle (the client's, a server's) stages what
//     it forwards on the queue instead (lineQueue.stage) and flushes once
//     after the last line, outside h.mu: one write(2) for the burst. A
//     push of any goroutine writes what is staged first, so the order
//     stays the order of decisions.
//   - The one file written under h.mu is the run's own grants file
//     (saveGrantsLocked: an atomic replace in a 0700 directory), so that
//     it never disagrees with the order of decisions.
//
// A child's observed and looked fields are guarded by h.mu; its other
// fields are set before it is shared and never change.
