// Package pipes tunes the pipes that carry MCP messages between the
// client, the host and the server: a 1 MiB buffer on Linux (Grow),
// descriptors of the host's own that wait in the runtime's poller instead
// of a thread (PollableReader, PollableWriter), and writes that never
// block, for the writer goroutine to finish (TryWriter, TryWriterV).
// Outside Linux the pipes are used as they are given.
package pipes
