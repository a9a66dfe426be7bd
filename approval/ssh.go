package approval

// The ssh channel: what an SSHSIG by an enrolled FIDO ssh key proves.
//
// mcpepoch approve --ssh KEY has ssh-keygen -Y sign -n mcpepoch-grant@v1
// sign the digest of a grant.Proposal the host proposed, a touch of the
// key. Package sshsig verifies the envelope (OpenSSH PROTOCOL.sshsig): a
// key of the trust store that is an sk key (a plain key signs without a
// touch and never counts), the namespace, the user-presence flag, a
// counter that grew. What that proves is decided here: presence, with the
// trust store the host pinned at start (Pinned), and under
// grants.attestation = "required" only by an attested key (none is, yet:
// enroll --ssh keeps no attestation).

// SSH returns what a verified SSHSIG over digest (hex, the proposal's)
// proves: presence by authenticator, the enrolled key that made it (its
// counter signCount), with the armored signature kept, so that audit
// verify can check it again.
func SSH(digest, signature, authenticator string, signCount uint32) Proven {
	return Proven{Proof: ProofPresence, Channel: ChannelSSH, Authenticator: authenticator, SignCount: signCount,
		Digest: digest, Signature: signature}
}
