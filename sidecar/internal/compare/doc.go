// Package compare is the model of a comparison: the same examples of one
// agent file run on several models (each model its own invocation and
// journal) and, optionally, against a baseline of the agent's instructions
// (the file at a git revision, or none). It owns the grid of examples ×
// columns and each cell's verdict, the per-example change against a
// baseline, the worst cell's exit code, the kmx.test.compare/v1 JSON
// document, the terminal table and the short Markdown summary a pull
// request shows, and reading the agent file at a revision with git.
//
// It runs nothing: the runner fills the grid (runner.Compare), and this
// package renders it; ReadAtRevision and InstructionsAt only read, and hand
// the runner (runner.ReadBaseline) the instructions to send. What it renders is safe by construction: example IDs,
// verdicts, counts, durations, model identities, run IDs and revisions,
// never an answer, an input, a tool argument, an endpoint or a credential.
// Reading a revision never checks anything out, and every refusal comes
// before anything is created or sent.
package compare
