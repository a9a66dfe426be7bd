// Package audit writes, reads and verifies the host's audit log: an
// append-only, hash-chained record of which code executed each action,
// captured by the host and verifiable afterwards (seed: "which code executed
// each action — hash-chained, captured by the host, verifiable").
//
// # Records
//
// The log is a file of JSON lines, conventionally .mcpepoch/audit.jsonl,
// written only by the host. Each line is one record: a JSON object in
// RFC 8785 (JCS) canonical form followed by "\n", for example
//
//	{"args_digest":"hmac-sha256:…","epoch":"01JQ…","hash":"sha256:…","prev":"sha256:…","run":"r1","seq":2,"time":"2025-03-01T10:00:01.250000000Z","tool":"read_file","type":"tool_called","v":1}
//
// with these members:
//
//	v      the schema version, the number 1 (Version)
//	seq    the record number: 1 for the first record, then one more per record
//	time   when the host wrote the record: RFC 3339, UTC, nine fractional digits (TimeLayout)
//	type   the event type (TypeServerStarted, …)
//	epoch  the execution epoch the event belongs to; absent where none applies
//	run    the agent run the event belongs to; absent where none applies
//	prev   the hash of the previous record; GenesisPrev for seq 1
//	hash   "sha256:" + hex(SHA-256(prev ‖ JCS(record without hash)))
//
// plus the event's own fields (Event.Fields) as further top-level members.
// The hash input is the bytes of the prev string (71 bytes, "sha256:" and 64
// hex digits) immediately followed by the JCS canonical form of the whole
// record object with the hash member removed (prev included). Verify
// re-canonicalizes every line, so whitespace and member order on disk do not
// matter; values do. GenesisPrev, the prev of seq 1, is "sha256:" followed by
// 64 zeros.
//
// # Values
//
// JCS writes every number as an IEEE 754 double, so integers beyond ±2^53
// cannot be represented exactly. Append converts every integer literal in
// Event.Fields whose magnitude exceeds 2^53 into a string of its decimal
// digits, at any depth; floating-point values keep their JCS form. Callers
// should pass identifiers, digests, sizes that may grow large and counters
// as strings in the first place. Only v and seq are numbers by construction.
//
// # Secrets
//
// The log is readable by whoever can read the project and must never hold a
// secret. Callers pass credential scope names, never credential values, and
// the keyed digest of a tool call's arguments (Key.ArgsDigest:
// "hmac-sha256:…", HMAC-SHA-256 under the project's key, see LoadKey),
// never the arguments. An unkeyed digest of a short secret is found by
// trying values; records written before digests were keyed carry
// "sha256:" and the hex SHA-256 of the arguments' RFC 8785 form. The package cannot tell a secret from any other
// string; this rule is the caller's.
//
// # Head file
//
// After each step the Log rewrites a head file, by default audit.head next
// to the log (HeadPath), holding the seq and hash of the last record:
//
//	{"v":1,"sum":"crc32c:1e3d5e33","seq":17,"hash":"sha256:…"}
//
// padded with spaces to 192 bytes, the last a newline. A head that does
// not exist yet is written atomically (temporary file in the same
// directory, fsync, rename, fsync of the directory); the Log keeps the
// head file open and rewrites it in place after every step, one pwrite(2)
// of all 192 bytes at offset 0 and an fdatasync (with Options.LazyHead,
// none, or one once HeadSyncEvery has passed since the oldest rewrite not
// yet synced, and at Close), as long as the file at the path is still the one it
// opened and has that size (otherwise it writes a new one atomically). The
// file never changes size, so a crash leaves the old head, the new one, or
// a torn one; "sum" is the CRC-32C of the seq and hash ("17 sha256:…", in
// hex), so a torn head is told from a head that names another record:
// ReadHead returns a *TornHeadError, Verify reports head-torn (not
// head-mismatch), and Open treats it as a missing head (below) whose
// log_recovered record says "head":"torn". The sum protects against
// crashes only; anyone who can write the file can compute it. A head
// without a sum, as written before heads had one, is read as it is and
// replaced by the first write. A log whose tail was cut off no longer ends
// with the record the head names; Verify reports it and Open refuses to
// append to it (HeadMismatchError).
//
// A log that has records but no head file lost its head: deleted, perhaps
// together with records cut from the end of the log. Verify reports it
// (head-missing). Open (and Append, when it finds the log changed) does not
// simply write a new head, which would make the cut log verify as intact:
// it appends a log_recovered record whose "head" member is "missing"
// (FieldHead, HeadMissing), chained to the last record, then writes the
// head. The gap stays in the chain for good: Verify reports every such
// record as a warning (head-was-missing, naming the seq it follows), and
// mcpepoch audit show lists it. Whether records were cut before it can only
// be told with a copy of the head kept elsewhere (below, "Copy of the
// head").
//
// A Log that is open remembers that copy: the last head it wrote or caught
// up with. When its next step finds the log ending before that seq (the
// log truncated, or the log and its head deleted, while it was open), it
// appends a log_recovered record whose "cut" member (FieldCut, a Cut)
// names the seqs that are gone and the head it remembers, chained to what
// is left (the genesis value for an empty log), and writes the head. It
// also remembers the size it left the log at: a log found shorter that
// still ends at or past that seq (a line deleted, the file rewritten in
// place) gets a log_recovered record with a "shrunk" member (FieldShrunk,
// a Shrunk) instead. The step that writes either fails with ErrCut and
// writes none of its own records, so that no action they guard is taken
// while the log loses records; the next step writes again. Verify reports
// every such record as a problem (cut): the log is broken for good.
//
// # Writers and locking
//
// The log is opened with O_APPEND|O_CREATE|O_NOFOLLOW, mode 0600: a log that is a
// symbolic link or not a regular file is refused. Write appends a whole
// batch of records in one step, one write(2) of all their lines, and
// Sync makes every record written so far durable: one fsync and one
// rewrite of the head; Append is a batch of one, synced at once. Records are
// encoded by a canonical encoder written for their shape (no reflection for
// the value types events carry), whose output equals json.Marshal followed
// by jcs.Transform byte for byte (tested and fuzzed). Two hosts serving the
// same project may share one log. Every step holds an exclusive flock(2)
// on a sibling lock file (audit.lock next to audit.jsonl; see Open): find
// the chain's tail, compute the records, append them, fsync, rewrite the
// head. A step waits at most Options.LockTimeout for the lock. A Log that
// appended last knows the tail; any other Log reads it back from the end
// of the file. Read and Verify hold a shared lock on the same file, so
// they never see a half-written record or a head that is ahead of the log.
// Write splits a step for a caller that must know a record is in the file
// before it acts but need not wait for the disk: it appends (write(2))
// and keeps the lock; Sync then fsyncs, rewrites the head and lets the
// lock go (at the latest after MaxHold while writes keep coming), so
// readers and other writers never see records the head does not name.
// The lock lives in its own file rather than on the log so that it still
// orders writers when the log is moved aside and recreated, and it is opened
// close-on-exec, so a child process cannot keep it. flock is advisory: it
// orders every Log in every process, not other programs writing the file.
// On platforms without flock (none of mcpepoch's targets) the lock orders the
// appends of one Log only, and two processes sharing a log may break its
// chain; Verify would report where.
//
// # Records that could not be written
//
// A step fails as a whole when the lock cannot be taken in time, when the
// log is damaged beyond recovery, or when a write or fsync fails (ENOSPC,
// EIO, EROFS, EFBIG…); the error is a *WriteError naming the file and the
// OS error. Records are never written out of order or twice: the records
// of a failed step that did not reach the file (all of them, or those past
// a short write) are counted as lost, by type, with the times of the first
// and the last. The first step that succeeds afterwards begins with a
// records_lost record (TypeRecordsLost) carrying that count, chained like
// any other record; Verify reports each one as a warning (WarnRecordsLost)
// and mcpepoch audit show lists it. While no step succeeds the count is
// kept in memory and, when it can be written, in a sidecar file next to
// the log (LostPath: audit.lost), so that a writer that ends first, such
// as the build hook, does not take it along; the next writer of the log
// records it and removes the file. A record whose fields cannot be encoded
// is refused by Append and counted as lost by Write.
//
// A writer that stopped between a batch and its head rewrite leaves the
// head up to a batch behind (MaxBatch records); a lazy head
// (Options.LazyHead) whose last rewrites a machine that stopped never
// wrote to the disk lags by up to HeadSyncEvery of records. Open and
// Append take the chain back, link by link, to the record the head names
// (up to a million records) and rewrite the head; Verify warns
// (head-behind) whatever the lag, naming the records past the head and
// the time of the first, as long as the log holds the head's record with
// its hash. A head past the log's end is a truncation (a problem), one
// whose record has another hash a mismatch.
//
// A head file without a log (audit.jsonl deleted or moved, audit.head kept)
// is a problem for Verify (log-missing), and Open refuses to start a new
// chain under it (HeadMismatchError).
//
// # Crash recovery
//
// A host killed while writing a record can leave a torn line: bytes of a
// record without the final newline, or (after a power failure) a line that is
// not a record. The log stays append-only even then: no byte once written is
// changed or removed, and nothing is moved elsewhere. When a Log finds lines
// that are not records after the last complete record (at Open, or at an
// Append after another process crashed), it
//
//  1. appends "\n" if the file does not end with one, closing the torn line;
//  2. appends a log_recovered record (TypeLogRecovered) whose "torn" member
//     lists each such line as {"offset","bytes","digest"}: its byte offset in
//     the file, its length without the newline, and the SHA-256 of its bytes;
//     the record's prev is the hash of the last complete record, so the torn
//     bytes never enter the chain;
//  3. reports the repair as a Recovery (Log.Recoveries).
//
// A last line that is a complete, self-consistent record and lacks only its
// newline gets the newline and stays in the chain. Verify treats torn lines
// named by the log_recovered record right after them as warnings, and lines
// that are not records at the very end of the log (a crash not yet
// recovered) as warnings too: the log verifies up to its last complete
// record. A line that is not a record anywhere else is a problem. When the
// head file is missing as well, the one log_recovered record carries both
// members, torn and head. If the host
// stopped after appending a record but before rewriting the head, the head is
// one record behind: Verify warns, and the next Open or Append rewrites it.
//
// # Copy of the head
//
// The log and its head live in the project, which whoever can write the
// project can rewrite together, chain and all. A Log opened with
// Options.CopyDir (the host passes the user's state directory for the
// project, outside it) keeps a copy of the head there, CopyHeadPath, in
// the head file's format and written the same way, and appends the seq
// and hash of every checkpoint record (Event.Checkpoint) to
// CopyCheckpointsPath. Each step writes them after its records are
// durable and before the head file, so a writer killed in between leaves
// the copy at or ahead of the head file, never behind it; a copy that
// cannot be written fails the step (a *WriteError, Op "copy").
//
// The catch-up before a step compares the copy with the log's tail: the
// same record is the rule. A copy missing while the log has records (a
// log written before its writers kept one, or the directory removed),
// torn by a crash, or behind by at most a batch with the head file no
// further (a writer killed between appending records and syncing them)
// is recorded in a log_recovered record whose "copy" member (FieldCopy, a
// CopyFound) names the path and what was found, and then written again:
// the records before it were not anchored outside the project, and the
// chain says so for good. Anything else (a copy naming a record the log
// does not have, with another hash or past its end, or one behind a head
// file written without it) is a *CopyMismatchError: the log was rewritten
// or cut, or appended to by a writer that does not keep the copy; the
// Log appends nothing until a person has looked and removed the copy to
// accept the log as it is.
//
// VerifyWith with VerifyOptions.CopyDir compares the same way: a copy that
// names a record the log does not have is ProblemCopyMismatch, so is a
// checkpoint kept there that the log no longer holds; a copy behind a
// head file in the project is ProblemCopyUnanchored; a missing copy, a
// torn one, and one that lags as a killed writer leaves it are warnings,
// as is every log_recovered record with a copy member.
//
// # What the chain proves
//
// The chain has no key. It detects edited, deleted, reordered and inserted
// records and damaged lines, and with the head file a truncated tail.
// Someone who can write both files can still rewrite all of it
// consistently; the copy of the head outside the project (above) anchors
// it for as long as they cannot write that copy too.
package audit
