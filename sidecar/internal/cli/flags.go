package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/english"
	"github.com/kmxdev/kmx/sidecar/internal/localtools"
	"github.com/kmxdev/kmx/sidecar/internal/runner"
)

// stringList is a repeatable string flag (--example a --example b).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// optionalString is a string flag that remembers whether it was given.
type optionalString struct {
	set   bool
	value string
}

func (o *optionalString) String() string     { return o.value }
func (o *optionalString) Set(v string) error { o.set, o.value = true, v; return nil }

// newFlagSet returns a FlagSet that reports errors as UsageErrors instead of
// printing and exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments (kmx test FILE --json) and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string, usage string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &HelpRequest{Text: helpText(fs, usage) + helpNote(fs.Name())}
			}
			return nil, usagef(usage, "kmx %s: %s", fs.Name(), dashedFlags(err.Error()))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// goFlagName is a flag name as the flag package's errors spell it
// ("flag provided but not defined: -frob", "invalid value … for flag
// -trials", "flag needs an argument: -model").
var goFlagName = regexp.MustCompile(`(: |flag |for )-([A-Za-z][A-Za-z0-9-]*)`)

// dashedFlags respells the flag package's -name as --name, as every usage
// line, help text and next step spells a flag.
func dashedFlags(msg string) string {
	return goFlagName.ReplaceAllString(msg, "$1--$2")
}

// hiddenFlag starts the usage of a flag that -h does not list (one only
// tests use).
const hiddenFlag = "(hidden) "

// HelpRequest is -h or --help: not an error, but it ends the command before
// anything runs. Text is the command's usage with every flag; it goes to
// stdout and the exit code is 0.
type HelpRequest struct{ Text string }

func (h *HelpRequest) Error() string { return "help requested" }

// helpText is a command's usage line followed by every flag it takes, in the
// --name form the usage lines use.
func helpText(fs *flag.FlagSet, usage string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n", usage)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, hiddenFlag) {
			return
		}
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		name, text := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + name
		}
		fmt.Fprintf(&b, "  %-28s %s", arg, text)
		if f.DefValue != "" && f.DefValue != "false" {
			// A word is quoted, so "(default default)" reads (default "default").
			def := f.DefValue
			if _, err := strconv.Atoi(def); err != nil {
				def = strconv.Quote(def)
			}
			fmt.Fprintf(&b, " (default %s)", def)
		}
		b.WriteString("\n")
	})
	b.WriteString("\nExit codes: 0 ok, 1 findings or failures, 2 refusal or usage.\n")
	return b.String()
}

// helpNote is what a command's -h says after its exit codes: the
// subcommands it holds that its flags do not show.
func helpNote(cmd string) string {
	bound := "\nOne invocation runs for at most " + runner.BoundText(0) + " (the invocation bound); when it expires, the examples not finished are unknown: test fewer examples per invocation (--example ID"
	switch cmd {
	case "test":
		return bound + ", or --shard K/N over a folder) or more at once (--concurrency N).\n" +
			"\nkmx test explain FILE shows the retained failures of an agent file: why its examples failed (kmx test explain -h).\n"
	case "run":
		return bound + ") or more at once (--concurrency N).\n"
	}
	return ""
}

// isHelp reports whether args ask for help and nothing else.
func isHelp(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help")
}

// routeFlags are the model-route settings every executing command takes.
type routeFlags struct {
	model, endpoint, keyEnv, judgeEndpoint, judgeKeyEnv string
	// models is every --model given, in order (kmx test compares them);
	// model is the last.
	models      []string
	concurrency concurrencyFlag
	// toolBindings is the --tool-bindings file path (run, test, mcp).
	toolBindings string
}

// registerToolBindings adds --tool-bindings: the strict kmx.local-tools/v1
// file binding github_list_merged_prs to GitHub's read-only MCP server. It
// is read and checked at startup, before anything is created or sent.
func (r *routeFlags) registerToolBindings(fs *flag.FlagSet) {
	fs.Var(&routeSetting{p: &r.toolBindings, what: "the tool bindings path", next: "give the path of a kmx.local-tools/v1 JSON file, or drop --tool-bindings"},
		"tool-bindings", "`PATH` of a kmx.local-tools/v1 binding file for the live GitHub read (see docs/tools.md)")
}

// readToolBinding reads --tool-bindings, if given, as a refusal (exit 2)
// when the file cannot be used.
func readToolBinding(cmd string, rf routeFlags) (*localtools.Binding, error) {
	if rf.toolBindings == "" {
		return nil, nil
	}
	b, err := localtools.ReadBinding(rf.toolBindings)
	if err != nil {
		var be *localtools.BindingError
		if errors.As(err, &be) {
			return nil, &RefusalError{Msg: "kmx " + cmd + ": --tool-bindings " + be.Error(), Next: be.NextStep()}
		}
		return nil, fmt.Errorf("read --tool-bindings: %w", err)
	}
	return b, nil
}

func (r *routeFlags) register(fs *flag.FlagSet) {
	usage := "`NAME` of a model to use instead of the file's (\"fake\" for the deterministic fake model)"
	if fs.Name() == "test" {
		usage += "; repeat it to compare models, each its own run"
	}
	fs.Var(&modelFlag{r: r, cmd: fs.Name()}, "model", usage)
	fs.Var(&routeSetting{p: &r.endpoint, what: "the endpoint URL", next: "give an OpenAI-compatible base URL, for example http://127.0.0.1:11434/v1, or drop the flag"},
		"endpoint", "OpenAI-compatible base `URL` (HTTPS, or http://127.0.0.1 / http://[::1])")
	fs.Var(&routeSetting{p: &r.keyEnv, what: "the credential variable name", next: "name the environment variable that holds the credential (for example OPENAI_API_KEY), or drop --key-env for an endpoint that needs none"},
		"key-env", "`NAME` of the environment variable holding the endpoint's bearer credential")
	fs.Var(&routeSetting{p: &r.judgeEndpoint, what: "the judge endpoint URL", next: "give an OpenAI-compatible base URL for the judge, or drop the flag to judge on the agent's route"},
		"judge-endpoint", "OpenAI-compatible base `URL` for llmJudge samples")
	fs.Var(&routeSetting{p: &r.judgeKeyEnv, what: "the judge credential variable name", next: "name the environment variable that holds the judge credential, or drop --judge-key-env"},
		"judge-key-env", "`NAME` of the environment variable holding the judge endpoint's credential")
}

// routeSetting is a route flag that refuses an explicitly empty value: an
// empty --key-env "$NAME" (NAME unset in the shell) must not silently mean
// "no credential" or "no endpoint". Non-empty values are checked by the
// runner, which refuses without echoing them; an error from Set is quoted
// with its value by the flag package, so Set rejects only the empty value,
// whose quote cannot leak anything.
type routeSetting struct {
	p          *string
	what, next string
}

func (r *routeSetting) String() string {
	if r == nil || r.p == nil {
		return ""
	}
	return *r.p
}

func (r *routeSetting) Set(v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty; %s", r.what, r.next)
	}
	*r.p = v
	return nil
}

func oneFile(cmd string, pos []string, usage string) (string, error) {
	switch len(pos) {
	case 0:
		return "", usagef(usage, "kmx %s: name one agent file", cmd)
	case 1:
		return pos[0], nil
	}
	return "", usagef(usage, "kmx %s: one agent file at a time (got %d: %s)", cmd, len(pos), strings.Join(pos, " "))
}

// worstExit is the exit code of a command over many files: the worst one.
func worstExit(errs []error) error {
	var worst error
	for _, err := range errs {
		if err != nil && (worst == nil || exitCode(err) > exitCode(worst)) {
			worst = err
		}
	}
	return worst
}

// modelFlag is --model: once for every command, repeatable for kmx test
// (a comparison of the models, each its own invocation).
type modelFlag struct {
	r   *routeFlags
	cmd string
}

func (m *modelFlag) String() string {
	if m == nil || m.r == nil {
		return ""
	}
	return m.r.model
}

func (m *modelFlag) Set(v string) error {
	if len(m.r.models) > 0 && m.cmd != "test" {
		return fmt.Errorf("kmx %s takes one --model; compare models with kmx test FILE --model A --model B", m.cmd)
	}
	if slices.Contains(m.r.models, v) {
		return fmt.Errorf("this model is named twice; name each model once")
	}
	m.r.model = v
	m.r.models = append(m.r.models, v)
	return nil
}

// plural is english.Plural, the one wording of a count every front shares.
func plural(n int, word string) string { return english.Plural(n, word) }
