// Package invocation plans one invocation of an agent file, before anything
// is created or sent: it parses the file (and its sibling examples file),
// selects the examples, freezes kmx.yaml's tool settings and each example's
// tool set, decides every model route the invocation may reach (fake,
// OpenAI-compatible endpoint, or the models VS Code offers) and binds live
// tools. Whatever cannot run is refused here, as a *Refusal that says what
// is wrong and what to change, with the source range that causes it when
// there is one.
//
// It sits below everything that sends a turn: the runner executes a Plan,
// a conversation sends one turn of a ChatPlan, and the language server
// shows Preflight's refusals as diagnostics with the same words.
package invocation
