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

// withTools declares two tools; kmx.yaml beside it may set their states.
const withTools = "---\n" +
	"name: tooled\n" +
	"model: fake\n" +
	"tools: [github_list_merged_prs, ping]\n" +
	"---\n" +
	"Reply with exactly `ok`\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: one\n" +
	"  input: hi\n" +
	"  assert:\n" +
	"    - contains: ok\n" +
	"```\n"

// unfinished ends inside the Examples fence: still being written.
const unfinished = "---\n" +
	"name: draft\n" +
	"model: fake\n" +
	"---\n" +
	"Reply with exactly `ok`\n" +
	"\n" +
	"## Examples\n" +
	"\n" +
	"```yaml\n" +
	"- id: one\n" +
	"  input: hi\n"
