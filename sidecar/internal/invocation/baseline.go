package invocation

// Baseline replaces the instructions of an invocation with the ones a
// comparison measures the file against (kmx test --baseline REV|none): the
// agent file's instructions as they were at a git revision, or none. The
// examples, assertions, tools and routes stay the current file's, so the
// comparison isolates what the instructions change. The invocation is
// journaled like any other, under Revision and with these instructions in
// every turn; the runner records Rev, Commit and Path in its result and
// neither retains failures for Explain nor captures recordings into the
// current file from it.
type Baseline struct {
	// Rev is the revision as given, or "none" for empty instructions.
	Rev string
	// Commit is the full commit Rev resolved to, and Path the agent
	// file's path in the repository there; empty for "none".
	Commit, Path string
	// Instructions are what every agent turn sends instead of the file's.
	Instructions string
	// Revision is the agent revision journaled and reported: the SHA-256
	// of what ran (the file at Commit, or of the pair with the current
	// examples file), never the current file's.
	Revision string
}
