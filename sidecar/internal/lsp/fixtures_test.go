package lsp_test

// greeter is a valid agent on the fake model with three examples: first
// passes, second fails (the fake model never says Goodbye), third passes.
const greeter = "---\n" +
	"name: greeter\n" +
	"model: fake\n" +
	"---\n" +
	"You greet people.\n" +
	"Reply with exactly `Hello:` followed by the input\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: first\n" +
	"  input: Ada\n" +
	"  assert:\n" +
	"    - contains: \"Hello:\"\n" +
	"- id: second\n" +
	"  input: Grace\n" +
	"  assert:\n" +
	"    - contains: \"Hello:\"\n" +
	"    - contains: Goodbye\n" +
	"- id: third\n" +
	"  input: Linus\n" +
	"  assert:\n" +
	"    - regex: \"^Hello:\"\n" +
	"```\n"

// okHead is a body the fake model answers with exactly "ok", cut after
// its one example's input; okBody finishes it.
const (
	okHead = "Reply with exactly `ok`\n" +
		"\n" +
		"## Examples\n" +
		"\n" +
		"```yaml\n" +
		"- id: one\n" +
		"  input: hi\n"
	okBody = okHead +
		"  assert:\n" +
		"    - contains: ok\n" +
		"```\n"
)

// withTools declares two tools; kmx.yaml beside it may set their states.
const withTools = "---\n" +
	"name: tooled\n" +
	"model: fake\n" +
	"tools: [github_list_merged_prs, ping]\n" +
	"---\n" + okBody

// unfinished ends inside the Examples fence: still being written.
const unfinished = "---\n" +
	"name: draft\n" +
	"model: fake\n" +
	"---\n" + okHead
