package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kmxdev/kmx/sidecar/internal/conversation"
	"github.com/kmxdev/kmx/sidecar/internal/invocation"
	"github.com/kmxdev/kmx/sidecar/internal/problem"
)

const chatUsage = "kmx chat FILE [--input TEXT | --input-file PATH|- | --history | --discard-unfinished | --clear] [--conversation ID] [--model NAME] [--endpoint URL] [--key-env NAME] [--json]"

// runChat talks to the agent in FILE: one durable conversation per file and
// conversation ID (see docs/conversations.md). With --input it sends one
// turn; with none of the mode flags it reads one message per line from
// standard input until it ends.
func runChat(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("chat")
	var rf routeFlags
	var input, inputFile optionalString
	var id string
	var history, discard, clear, asJSON bool
	fs.Var(&input, "input", "the message `TEXT` to send (one turn)")
	fs.Var(&inputFile, "input-file", "read the message from `PATH` (- for standard input)")
	fs.StringVar(&id, "conversation", conversation.DefaultID, "conversation `ID` (letters, digits, . _ -)")
	fs.BoolVar(&history, "history", false, "print the history, replayed from the journal with zero model calls")
	fs.BoolVar(&discard, "discard-unfinished", false, "discard the last turn whose outcome was never recorded")
	fs.BoolVar(&clear, "clear", false, "delete the conversation")
	fs.BoolVar(&asJSON, "json", false, "print the kmx.chat/v1 JSON")
	rf.register(fs)
	pos, err := parseInterspersed(fs, args, chatUsage)
	if err != nil {
		return err
	}
	path, err := oneFile("chat", pos, chatUsage)
	if err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{input.set || inputFile.set, history, discard, clear} {
		if on {
			modes++
		}
	}
	if modes > 1 || (input.set && inputFile.set) {
		return usagef(chatUsage, "kmx chat: pass one of --input, --input-file, --history, --discard-unfinished or --clear")
	}
	if rf.judgeEndpoint != "" || rf.judgeKeyEnv != "" {
		return usagef(chatUsage, "kmx chat: a conversation is not judged: drop --judge-endpoint/--judge-key-env")
	}
	req := conversation.Request{File: path, ID: id, Route: runOptions(env, rf).Options}

	var res *conversation.Transcript
	switch {
	case history:
		res, err = conversation.History(ctx, req)
	case discard:
		res, err = conversation.Discard(ctx, req)
	case clear:
		res, err = conversation.ClearConversation(req)
	case input.set || inputFile.set:
		text := input.value
		if inputFile.set {
			if text, err = readInputFile(env, inputFile.value); err != nil {
				return err
			}
		}
		res, err = conversation.Say(ctx, req, text)
	default:
		return chatLines(ctx, env, req, asJSON)
	}
	return chatOutcome(env, res, err, asJSON, history || clear || discard)
}

// chatOutcome prints a result (text or JSON) and maps the error to the exit
// code: refusals 2, a turn that ran but did not answer 1.
func chatOutcome(env Env, res *conversation.Transcript, err error, asJSON, whole bool) error {
	_, refused := conversation.AsRefusal(err)
	if res != nil && (asJSON || !refused) {
		if asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			if encErr := enc.Encode(res); encErr != nil {
				return fmt.Errorf("write result: %w", encErr)
			}
		} else {
			printChat(env.Stdout, res, whole)
		}
	}
	if err == nil {
		return nil
	}
	if refused {
		return &RefusalError{Msg: err.Error(), Next: problem.NextStep(err)}
	}
	if res != nil && res.Turn != nil {
		return &FailureError{Msg: err.Error()}
	}
	return &RefusalError{Msg: err.Error(), Next: problem.StepFor(err, "nothing was added to the conversation")}
}

// printChat prints the whole history (whole) or the turn just sent.
func printChat(w io.Writer, res *conversation.Transcript, whole bool) {
	model := "no model yet"
	if res.Model != nil {
		model = fmt.Sprintf("model %s (route %s)", res.Model.Model, res.Model.Route)
	}
	fmt.Fprintf(w, "kmx chat %s · conversation %s · %s · %s\n", res.File, res.Conversation, model, res.Label)
	switch {
	case res.Cleared != nil && *res.Cleared:
		fmt.Fprintln(w, "cleared")
		return
	case res.Cleared != nil:
		fmt.Fprintln(w, "nothing to clear")
		return
	}
	turns := res.Turns
	if !whole && res.Turn != nil {
		turns = []conversation.ChatTurn{*res.Turn}
	}
	for _, t := range turns {
		fmt.Fprintf(w, "\n── turn %d ── %s\n", t.N, t.State)
		fmt.Fprintf(w, "you:   %s\n", indentAfterFirst(sanitizeForTerminal(t.Input)))
		switch {
		case t.State == conversation.StateAnswered:
			fmt.Fprintf(w, "agent: %s\n", indentAfterFirst(sanitizeForTerminal(t.Answer)))
		case t.Error != "":
			fmt.Fprintf(w, "       (%s)\n", t.Error)
		}
	}
	if whole {
		fmt.Fprintf(w, "\nreplayed from the journal: %s, %d model calls\n", plural(len(res.Turns), "turn"), res.ReplayLiveCalls)
	}
	if res.Unfinished > 0 {
		fmt.Fprintf(w, "turn %d has no recorded outcome: kmx chat %s --discard-unfinished%s lets the conversation continue\n", res.Unfinished, res.File, conversation.Flag(res.Conversation))
	}
	if res.Pending > 0 {
		fmt.Fprintf(w, "turn %d is running now (in another window or process): its answer is not in the history yet\n", res.Pending)
	}
}

func indentAfterFirst(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n       ")
}

// chatLines sends one turn per non-empty line of standard input, in order,
// until it ends or a turn does not answer.
func chatLines(ctx context.Context, env Env, req conversation.Request, asJSON bool) error {
	sc := bufio.NewScanner(env.Stdin)
	sc.Buffer(make([]byte, 64<<10), invocation.MaxAdHocInput+1)
	sent := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		res, err := conversation.Say(ctx, req, line)
		if err := chatOutcome(env, res, err, asJSON, false); err != nil {
			return err
		}
		sent++
	}
	if err := sc.Err(); err != nil {
		return usagef(chatUsage, "kmx chat: cannot read standard input: %v", err)
	}
	if sent == 0 {
		return usagef(chatUsage, "kmx chat: nothing to send: pass --input TEXT, or type one message per line on standard input")
	}
	return nil
}
