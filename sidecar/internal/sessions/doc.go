// Package sessions owns the embedded Sessions service: it places each fresh
// session on a harness, runs journaled turns through that harness over an
// in-memory gRPC listener, and verifies a journaled turn by replaying it with
// zero model calls.
//
// It never opens a port, socket file or subprocess, never talks to a model
// itself (only harnesses do) and never reports a turn as verified unless all
// five records are present, well formed and replay to the same answer.
package sessions
