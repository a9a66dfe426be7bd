package audit

// Event types. The host writes one record per event; TypeLogRecovered is
// written by the Log itself and refused by Append.
const (
	TypeServerStarted       = "server_started"       // a child launched under a new epoch
	TypeCatalogPublished    = "catalog_published"    // a tools/list revision was sent to the client
	TypeBuildRecorded       = "build_recorded"       // the build hook signalled a new build
	TypeServerReplaced      = "server_replaced"      // a child was replaced by one under a new epoch
	TypeIdentityDrift       = "identity_drift"       // what the running epoch's identity names changed on disk, and no build restarted it: its grants revoked
	TypeApprovalGranted     = "approval_granted"     // a human approved a grant scope
	TypeApprovalRefused     = "approval_refused"     // an approval did not prove what the project counts as a person
	TypeGrantRevoked        = "grant_revoked"        // a grant was revoked
	TypeRevokeRefused       = "revoke_refused"       // a revoke request file named a live grant but did not read as a person's request: left where it is, the grant stays
	TypeRenewalPrepared     = "renewal_prepared"     // an epoch change revoked grants: the same scopes were prepared for the new epoch
	TypeTrustStoreChanged   = "trust_store_changed"  // the trust store differs from the one the host pinned at start
	TypeTrustPinned         = "trust_pinned"         // the trust store the host pinned at start: digest, entries, the root and whether it is attested
	TypePolicyNotApplied    = "policy_not_applied"   // mcpepoch.toml would weaken the project's policy floor: the floor's values stay in force
	TypePolicyRaised        = "policy_raised"        // mcpepoch.toml strengthened the policy: in force at once, and the floor raised
	TypePolicyAccepted      = "policy_accepted"      // a person accepted a weakening of the policy floor (mcpepoch policy accept), with its proof
	TypePolicyFloorMissing  = "policy_floor_missing" // no floor (or no trust root) where the audit log shows an earlier host ran with one: the strictest policy is in force
	TypeTrustStoreMissing   = "trust_store_missing"  // the trust store holds no authenticator where the project's audit log shows an earlier host pinned a root: only presence counts
	TypePolicyFloorRefused  = "policy_floor_refused" // the floor file says a person accepted it, but its acceptance does not hold (not the floor held, a level it does not count, a signature that does not verify): the floor held stays
	TypePolicyFloorHeld     = "policy_floor_held"    // the floor a running host holds changed (raised by mcpepoch.toml, a person's accepted floor taken, or restored after a refusal): the floor, as the next host start checks its file against
	TypeApprovalAsked       = "approval_asked"       // the host asked a person through the MCP client (elicitation) for a grant a waiting call needs
	TypeApprovalAnswered    = "approval_answered"    // the MCP client answered such a request (accept, decline, cancel), or an error
	TypeApprovalWaitEnded   = "approval_wait_ended"  // the calls held for an approval were released or refused, and why
	TypeToolCalled          = "tool_called"          // a tools/call was forwarded to the child
	TypeToolResult          = "tool_result"          // the child answered a tools/call
	TypeRequestForwarded    = "request_forwarded"    // a client request other than tools/call that runs server code (resources/read, prompts/get, completion/complete, resources/subscribe, logging/setLevel…) was forwarded to the child, or replayed to a new one
	TypeRequestResult       = "request_result"       // the child answered such a request: result or error
	TypeAuthorizationDenied = "authorization_denied" // a call was refused for lack of a grant
	TypeCallAborted         = "call_aborted"         // a call ended without a result (child exited, epoch changed)
	TypeCredentialIssued    = "credential_issued"    // the broker handed a scope's secret to a granted call in flight (never the value)
	TypeCredentialDenied    = "credential_denied"    // the broker refused a request for a secret, and which condition failed
	TypeClientConnected     = "client_connected"     // an MCP client connected to the host
	TypeClientClosed        = "client_closed"        // the client went away
	TypeChildOutputDropped  = "child_output_dropped" // child output was discarded (not JSON-RPC, over limit)
	TypeLogRecovered        = "log_recovered"        // torn lines were closed, or a missing head was found (see the package doc)
)

// Types lists every record type a log can hold, in the order the
// constants above are declared, TypeRecordsLost and TypeLogRecovered
// (written by the Log itself) last. It is the one list: audit show --type
// and the README's list of events follow it.
func Types() []string {
	return []string{
		TypeServerStarted, TypeCatalogPublished, TypeBuildRecorded, TypeServerReplaced, TypeIdentityDrift,
		TypeApprovalGranted, TypeApprovalRefused, TypeGrantRevoked, TypeRevokeRefused, TypeRenewalPrepared, TypeTrustStoreChanged,
		TypeTrustPinned, TypePolicyNotApplied, TypePolicyRaised, TypePolicyAccepted, TypePolicyFloorMissing, TypePolicyFloorRefused, TypePolicyFloorHeld, TypeTrustStoreMissing,
		TypeApprovalAsked, TypeApprovalAnswered, TypeApprovalWaitEnded,
		TypeToolCalled, TypeToolResult, TypeRequestForwarded, TypeRequestResult, TypeAuthorizationDenied, TypeCallAborted,
		TypeCredentialIssued, TypeCredentialDenied,
		TypeClientConnected, TypeClientClosed, TypeChildOutputDropped,
		TypeRecordsLost, TypeLogRecovered,
	}
}

// HeadMissing is the value of the head member of a log_recovered record
// appended because the head file was missing (see the package doc).
const HeadMissing = "missing"

// HeadTorn is the value of the head member of a log_recovered record
// appended because the head file was torn by a crash during its in-place
// rewrite (see the package doc): like a missing head, what it named is lost.
const HeadTorn = "torn"

// Field names with a fixed meaning. Other field names are free; these are
// the ones FormatTimeline shows specially.
const (
	FieldEntry      = "entry"       // digest of the entry file ("sha256:…"), on server_started and server_replaced
	FieldPrevEpoch  = "prev_epoch"  // the epoch a server_replaced record ends
	FieldTool       = "tool"        // tool name, on tool_called, tool_result, authorization_denied, call_aborted
	FieldArgsDigest = "args_digest" // Key.ArgsDigest of the call's arguments, on tool_called
	FieldMethod     = "method"      // the JSON-RPC method of the request, on request_forwarded, request_result and call_aborted
	FieldRequestID  = "request_id"  // the client's JSON-RPC id of the request, on call_aborted of a request the server got
	FieldTorn       = "torn"        // the torn lines a log_recovered record closes, as []TornLine
	FieldHead       = "head"        // HeadMissing or HeadTorn on a log_recovered record written because the head file was missing or torn
	// FieldCut is a log_recovered record's account of records cut from
	// the log while a writer had it open (truncated, or the log and its
	// head deleted): a Cut, the seq range lost and the head the writer
	// last wrote. Verify reports it as a problem.
	FieldCut = "cut"
	// FieldShrunk is a log_recovered record's account of a log found
	// shorter than the writer left it, though it still ends at or past
	// the seq the writer last wrote (a line deleted, the log rewritten
	// shorter): a Shrunk. Verify reports it as a problem.
	FieldShrunk = "shrunk"
	// FieldCopy is a log_recovered record's account of the copy of the
	// head kept outside the project (Options.CopyDir) found missing, torn
	// or behind the log when a writer caught up: a CopyFound. Verify
	// reports it as a warning.
	FieldCopy = "copy"
)
