package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/credsource"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/termsafe"
	"github.com/mcpepoch/mcpepoch/internal/treewatch"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// State is a state of the host's state machine (see the package doc).
type State = localapi.State

// The host's states.
const (
	StateReady           = localapi.StateReady
	StateIdentityPending = localapi.StateIdentityPending
	StateCatalogReady    = localapi.StateCatalogReady
	StateDown            = localapi.StateDown
)

// Mode is what the host does when a build signal finds new code
// (localapi.Mode).
type Mode = localapi.Mode

// Restart modes.
const (
	ModeKeep   = localapi.ModeKeep
	ModeClose  = localapi.ModeClose
	ModeManual = localapi.ModeManual
)

// Options configure a Host.
type Options struct {
	// Dir is the project root: the child's working directory and the place
	// of .mcpepoch/. Absolute, symlinks resolved.
	Dir     string
	Command []string // launch command of the server
	Label   string   // server label shown to people
	// Spec describes how to compute identity (entry, lockfiles); Dir and
	// Command are filled from the fields above.
	Spec build.Spec
	// Mode is the restart mode; empty means ModeKeep.
	Mode Mode
	// Policy says which tools need a grant; nil means every tool does.
	Policy *grant.Policy
	// Grace is how long a stopping child gets after SIGTERM before SIGKILL
	// (default 5 s).
	Grace time.Duration
	// MaxLine is the largest message, in bytes, passed in either direction
	// (default 16 MiB).
	MaxLine int
	// InitTimeout bounds each request the host itself sends to a child
	// (initialize replay, tools/list) and the child's answer to the
	// client's initialize (handshake.go); host.init_timeout, default 30 s.
	InitTimeout time.Duration
	// MaxCrashes is how many quick exits in a row (each within
	// QuickCrash of its start) the host restarts before it gives up
	// (default 5).
	MaxCrashes int
	QuickCrash time.Duration // default 10 s
	// AllowSelfReload lets the launch command reload code in-process
	// (mcpepoch.toml allow_self_reload); otherwise Run refuses such a
	// command with a *SelfReloadError (selfreload.go).
	AllowSelfReload bool
	// Verbose logs every message read from the client or the server and
	// every one written to the client: direction, kind, method, id, size
	// (trace.go), never its params or result.
	Verbose bool
	// Quiet leaves routine lines out of the log (infof): epoch changes,
	// refusals and problems stay.
	Quiet bool
	// FirstStartWait bounds how long the client's initialize is held
	// while no server of this host has ever answered one (the project
	// is not built yet; firststart.go); default 3 minutes.
	FirstStartWait time.Duration
	// Drain is how long, at a restart, the old server gets to answer the
	// requests in flight at it (host.drain; restart.go); zero answers them
	// server_restarted at once.
	Drain time.Duration
	// DrainDuring starts the new server while the old one drains
	// (host.drain_start = "during"); false starts it once the old one
	// has exited.
	DrainDuring bool
	// Credentials are the project's credential scopes (mcpepoch.toml
	// [credentials.NAME], as config.Load checked them): where each secret
	// is and how the server gets it (credentials.go). The values of env
	// sources are read from the host's environment and CredentialEnv by
	// New.
	Credentials map[string]config.Credential
	// CredentialEnv holds values of env sources (NAME=value, os.Environ's
	// form) that are no longer in the host's environment: mcpepoch host
	// starts itself again without them (package credenv) so that no
	// process can read them in its initial environment. Read after
	// os.Environ, so they win.
	CredentialEnv []string
	// TrustDir is the trust store's directory (package trust); empty
	// means trust.DefaultDir(). Whether an authenticator is enrolled sets
	// the default proof level (approval.DefaultProof).
	TrustDir string

	Stdin  io.Reader
	Stdout io.Writer
	// Stderr takes the host's log and the server's stderr through a
	// bounded buffer that never blocks the host (logsink.go). An *os.File
	// is written from a goroutine of its own; any other writer is taken to
	// be memory (a test's buffer) and is written at once.
	Stderr io.Writer
}

// Host is one gateway: one client connection (agent run), one child at a
// time. Its fields are grouped by job, each group with the lock that
// guards it: set before any goroutine starts; the session with the
// client; the child and its epoch; the catalog; grants and approval
// waits; the audit log; the watchers. Most groups share h.mu, taken for
// every client and server message only to decide and to queue (doc.go,
// "Locks", says what may and may not be done under it); a group with a
// lock of its own says so. Lock order: restartMu, then h.mu, then any
// group's own lock; presence's lock is never held while h.mu is taken.
//
// h.mu is one lock rather than one per group because a message's
// decision reads several groups at once (a tools/call: the session's
// in-flight ids, the epoch's state and child, the catalog, the grants
// and the audit writer's health) and must see them as one state; under
// eight concurrent callers the client and server readers wait on it for
// about a microsecond per call (mutex profile, docs/performance.md).
type Host struct {
	// Set by New and Run before any goroutine starts; read-only after.
	opts Options
	run  epoch.RunID // assigned when the client connects
	// clients is the chain that started the host: its parent, the
	// wrappers above it and the MCP client (package approval); enrolled: the
	// trust store held an authenticator at
	// start, or could not be read (trust.go).
	clients  approval.Launch
	enrolled bool
	ctx      context.Context // done when the host ends (run.go)
	cancel   context.CancelCauseFunc

	// mu guards every group below that names no lock of its own.
	mu sync.Mutex

	// --- The session with the client (client.go, handshake.go,
	// firststart.go), under mu: requests in flight and held, and what
	// the session needs replayed to each new child.
	inflight  map[string]*call // client request id → call
	relisting map[string]bool  // client request ids of calls held for a re-list (recheckUnknown)
	held      [][]byte         // client messages waiting for ready
	// verifying are granted tools/calls held while the epoch's identity
	// is unverified; verifyKick asks watchDrift to compute it (identity.go).
	verifying  []*verifyWait
	verifyKick chan struct{}
	verifyErr  error // why the last computation after a change failed, nil once one succeeds
	// verifiedAt is when the last computation that vouched for the epoch
	// began; passVerified names the calls it released, which go on
	// without being held again (identity.go: trees no notification
	// vouches for are hashed again for every granted call).
	verifiedAt   time.Time
	passVerified map[string]bool
	initParams   json.RawMessage // the client's initialize params, replayed to new children
	initLine     []byte          // the client's initialize request as sent
	initDone     bool            // the client received its initialize result
	initialized  bool            // the client sent notifications/initialized
	protocol     string          // protocolVersion negotiated in the legacy era
	stateless    bool            // server/discover succeeded: MCP 2026-07-28
	// handshakeEra: the server answered server/discover with an error or
	// exited on it; the host answers the probe itself (protocol.go).
	handshakeEra bool
	caps         serverCaps      // the lists the client was told the server has
	meta         json.RawMessage // _meta of the client's latest stateless request
	listens      map[string]*listen
	session      []sessionRequest // logging/setLevel, resources/subscribe: replayed in order
	swallowAck   map[string]bool  // listen ids re-sent to a new child
	// Bursts (queue.go, lineQueue.stage): clientReading says handleClient
	// runs, so the records and lines it forwards wait for fromClient to
	// write them outside h.mu (auditor.guard); the queues the client
	// reader staged a burst's lines on, flushed after its last line;
	// childMore says a server's reader has more lines of its burst
	// (toClientStagedLocked).
	clientReading bool
	clientStaged  []*lineQueue
	childMore     bool
	// out writes the client's stdout from a goroutine of its own, under
	// its own lock (queue.go): safe to use under h.mu, it never blocks.
	out *lineQueue
	// ownOut is the host's own descriptor of its stdout pipe, which out
	// writes (pipes.PollableWriter); nil when out writes Options.Stdout
	// itself. Set before any goroutine starts.
	ownOut *os.File

	// --- The child and its epoch (restart.go, child.go, restart.go,
	// recover.go, server.go). restartMu orders restarts, the initial
	// catalog fetch, catalog re-lists, crash recovery and the final stop
	// (restart.go, catalog.go, child.go, run.go); it is taken before
	// h.mu, never under it. The state machine and the server side are
	// under mu.
	restartMu     sync.Mutex
	state         State
	stateSince    time.Time
	downReason    string
	child         *child // the current epoch; nil while identity-pending or down
	ended         *child // the last child that exited on its own, until replaced
	endedRevoked  int    // grants revoked when ended exited
	crashes       int    // quick exits in a row
	recovering    bool   // down, but a restart is coming: client messages are held (recover.go)
	idle          bool   // down after an exit 0: the next request starts the server again
	gaveUp        bool   // down after MaxCrashes: until a build signal, restart or hashed file change
	pendingManual bool   // ModeManual: a signal found new code
	// everUp: a server of this host answered initialize (or
	// server/discover); until then the host waits for a first build
	// (firststart.go). unbuilt names what the last identity found
	// missing; firstWaitOver: FirstStartWait has passed.
	everUp         bool
	unbuilt        []string
	firstWaitOver  bool
	firstWaitArmed bool
	// buildFailed: the last build signal said the build failed; drift's
	// advice then names a build that succeeds, never mcpepoch restart,
	// which would start the code that failed (identity.go).
	buildFailed bool
	// A restart's ends (restart.go): the server_restarted errors of the
	// calls it ended, held until the client is told the catalog may have
	// changed (holdAborts, heldAborts); how many restarts wait for
	// restartMu, and the child whose ready waits for them (readyAfter,
	// readyAnnounce) so that held calls are never released into an epoch
	// the next restart replaces.
	holdAborts     bool
	heldAborts     [][]byte
	restartsQueued int
	readyAfter     *child
	readyAnnounce  bool
	// The server side (server.go): the host's own requests to a child and
	// the child's requests to the client.
	private     map[string]chan []byte // private id → where its answer goes
	nextPrivate int
	serverReqs  map[string]*serverReq // host id given to a server→client request → where it came from
	// guard kills the servers' process groups if the host dies without
	// stopping them: one process for the host's life, watching each
	// group from its start to its stop (child.go). Its own lock.
	guard *childproc.Guard
	// versions caches runtime digest → version, so a restart does not run
	// node --version again (child.go). Its own lock.
	versions sync.Map

	// --- The catalog and its checks (catalog.go, catalog.go, catalog.go),
	// under mu.
	catalog  *Catalog
	tools    map[string]*tool
	informed map[string]build.Digest // tool → definition the client was last given
	listed   listedMemo              // the last tools/list result the client was given (catalog.go)
	fetching bool                    // the first catalog fetch is under way
	early    []earlyCall             // tools/calls waiting for the first catalog (catalog.go)
	refresh  refreshState            // re-lists after the server's own list_changed
	// lists holds the digest of the prompts and resources lists the client
	// could last have seen, by method (catalog.go); changedLists are those a
	// restart found changed, announced when it is ready.
	lists        map[string]build.Digest
	changedLists []string
	listSeen     map[string]listSeen // the last list fetched by method, and its digest (catalog.go)

	// --- Grants and approval waits (grants.go, grantapprove.go,
	// elicit.go, grants.go, credentials.go, floor.go, configwatch.go),
	// under mu, but for presence, which has a lock of its own.
	// policy is the grants policy in force; config what the host knows of
	// mcpepoch.toml (configwatch.go): a re-read policy is put in force as
	// an epoch begins. floor is the project's policy floor (floor.go).
	policy   *grant.Policy
	config   configState
	floor    floorState
	grants   *grant.Store
	pending  []*Pending // calls refused for lack of a grant, for the reviewer
	approved *snapshot  // what the person saw at the last approval
	// Renewals (grants.go): what the last revoked grants covered, and
	// the renewal prepared from it for the running epoch.
	renewBase *renewalBase
	renewal   *renewal
	// Approvals asked through the client (elicit.go): open asks, and the
	// host ids of their elicitation/create requests.
	asks    []*ask
	elicits map[string]*ask
	// Presence approvals (presence.go): their own lock, never held
	// while taking h.mu.
	pres presence
	// Credentials (credentials.go): the sources, read by New; secrets of
	// command sources kept for the life of the grant they were read
	// under.
	creds     *credsource.Set
	credKeep  map[credKey]keptSecret
	sweepOnce sync.Once // stale broker sockets are removed at the first epoch

	// --- The audit log and the host's own log: writers with their own
	// goroutine and lock (auditlog.go, logsink.go), safe to use under
	// h.mu, they never block.
	audit *auditor // the project's audit log
	log   *logSink // the host's stderr: log lines and the server's stderr (logsink.go)

	// --- The watchers, each with its own lock. signals makes one build
	// id one restart, from the socket or the manifest watch
	// (signal.go). trees keeps the identity's trees current from
	// file notifications (identity.go); nil before Run, which closes it
	// after the socket server. caches are the identity's stat caches, in
	// memory only (identity.go): the host never takes a digest from the
	// on-disk caches, which any process of the user can write.
	signals buildSignals
	trees   *treewatch.Watcher
	caches  *build.Caches
}

// New returns a Host for opts, filling defaults.
func New(opts Options) *Host {
	if opts.Mode == "" {
		opts.Mode = ModeKeep
	}
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.MaxLine == 0 {
		opts.MaxLine = 16 << 20
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 30 * time.Second
	}
	if opts.MaxCrashes == 0 {
		opts.MaxCrashes = 5
	}
	if opts.FirstStartWait == 0 {
		opts.FirstStartWait = 3 * time.Minute
	}
	if opts.QuickCrash == 0 {
		opts.QuickCrash = 10 * time.Second
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Policy == nil {
		opts.Policy = &grant.Policy{}
	}
	opts.Spec.Dir, opts.Spec.Command = opts.Dir, opts.Command
	now := time.Now()
	h := &Host{
		opts: opts, run: epoch.NewRunID(now),
		state: StateDown, stateSince: now, downReason: "not started",
		inflight: map[string]*call{}, relisting: map[string]bool{}, serverReqs: map[string]*serverReq{}, private: map[string]chan []byte{},
		listens: map[string]*listen{}, elicits: map[string]*ask{}, swallowAck: map[string]bool{}, informed: map[string]build.Digest{}, lists: map[string]build.Digest{},
		policy: opts.Policy, clients: approval.LaunchOf(os.Getppid(), approval.LaunchHint()), config: newConfigState(opts.Dir),
		pres: presence{pages: map[string]*webApproval{}, ssh: map[string]*sshProposal{}}, caches: build.NewCaches(),
		verifyKick: make(chan struct{}, 1), guard: childproc.NewGuard(),
	}
	h.log = newLogSink(opts.Stderr, logSinkMax)
	h.openCredentials()
	return h
}

// logf writes one log line to stderr. Tool names and other text from the
// server go into it, so it is escaped for the terminal: a server cannot
// forge a log line or send escape sequences through the host's log.
func (h *Host) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "mcpepoch host: %s %s\n", time.Now().Format(logTime), termsafe.EscapeText(fmt.Sprintf(format, args...)))
}

// infof is logf for a routine line (a server started, the socket, a
// catalog, the client closing), which Options.Quiet leaves out.
func (h *Host) infof(format string, args ...any) {
	if !h.opts.Quiet {
		h.logf(format, args...)
	}
}

// logTime is the layout of the local time that starts every line of the
// host's log, after its prefix: "mcpepoch host: 15:04:05.000 …". The
// server's own stderr, passed through, is not stamped.
const logTime = "15:04:05.000"
