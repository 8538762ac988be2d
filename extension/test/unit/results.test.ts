import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ExampleResult, Range, Report } from "../../src/protocol";
import { flakyText, outcomeOf, outcomesFor, runVerdictText, summaryLine, toolLines, turnOutcomes, usageLines, usageMark, usageText } from "../../src/results";

function rng(line: number): Range {
  return { start: { offset: 0, line, character: 0 }, end: { offset: 0, line, character: 9 } };
}

function ex(over: Partial<ExampleResult>): ExampleResult {
  return { id: "e", verdict: "pass", journaled: true, verified: true, durationMs: 3, range: rng(12), ...over };
}

function report(over: Partial<Report>): Report {
  return {
    schema: "kmx.localpreview.report/v1",
    label: "local preview",
    command: "test",
    agent: { path: "a.agent.md" },
    route: { agent: { route: "fake", model: "fake" } },
    selection: "full",
    verdict: "fail",
    journaled: true,
    durationMs: 1,
    summary: { pass: 1, fail: 1, unknown: 1, refused: 0 },
    examples: [],
    ...over,
  };
}

const failing = ex({
  id: "billing",
  verdict: "fail",
  message: "1 of 1 assertions failed (#1)",
  deciding: 0,
  decidingRange: rng(20),
  assertions: [{ index: 0, type: "contains", outcome: "fail", expected: "billing", actual: "bug", message: "the answer does not contain the expected text" }],
});

describe("outcomeOf", () => {
  const cases: { name: string; in: ExampleResult; kind: string; textHas: string[]; firstRangeLine?: number }[] = [
    { name: "pass", in: ex({}), kind: "passed", textHas: [] },
    { name: "pass without replay verification is never passed", in: ex({ verified: false }), kind: "errored", textHas: ["inconclusive"] },
    { name: "pass without a journal is never passed", in: ex({ journaled: false }), kind: "errored", textHas: ["inconclusive"] },
    { name: "fail points at the deciding assertion", in: failing, kind: "failed", textHas: ["assertion 1 (contains)", "billing: failed"], firstRangeLine: 20 },
    {
      name: "unknown is errored and says inconclusive",
      in: ex({ id: "judged", verdict: "unknown", message: "a judge sample was inconclusive", deciding: 0, decidingRange: rng(25), assertions: [{ index: 0, type: "llmJudge", outcome: "unknown", message: "inconclusive sample", scores: [null, 100], threshold: 70, expected: "score >= 70 from both samples", actual: "scores none, 100" }] }),
      kind: "errored",
      textHas: ["inconclusive", "scores none, 100; threshold 70", "needed: score >= 70 from both samples", "got: scores none, 100"],
      firstRangeLine: 25,
    },
    { name: "unknown without a deciding assertion still says inconclusive", in: ex({ verdict: "unknown", message: "not sent: cancelled" }), kind: "errored", textHas: ["inconclusive", "not sent: cancelled"], firstRangeLine: 12 },
    { name: "refused carries the refusal text", in: ex({ verdict: "refused", message: "tool assertions need tools" }), kind: "errored", textHas: ["refused: tool assertions need tools"] },
    { name: "an unknown verdict word is inconclusive, not passed", in: ex({ verdict: "maybe" }), kind: "errored", textHas: ["inconclusive", "maybe"] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const o = outcomeOf(c.in);
      assert.equal(o.kind, c.kind);
      const all = o.messages.map((m) => m.text).join("\n");
      for (const part of c.textHas) {
        assert.ok(all.includes(part), `${JSON.stringify(all)} lacks ${part}`);
      }
      if (c.kind !== "passed") {
        assert.ok(o.messages.length > 0, "a non-pass outcome needs a message");
      }
      if (c.firstRangeLine !== undefined) {
        assert.equal(o.messages[0]?.range?.start.line, c.firstRangeLine);
      }
    });
  }
  it("a failure keeps expected and actual for the diff and also marks the example line", () => {
    const o = outcomeOf(failing);
    assert.equal(o.messages[0]?.expected, "billing");
    assert.equal(o.messages[0]?.actual, "bug");
    assert.equal(o.messages[1]?.range?.start.line, 12);
  });
});

describe("outcomesFor", () => {
  it("maps requested ids in order and reports missing ones as inconclusive", () => {
    const r = report({ examples: [failing, ex({ id: "crash" })] });
    const got = outcomesFor(r, ["crash", "billing", "gone"]);
    assert.deepEqual(
      got.map((o) => [o.id, o.kind]),
      [
        ["crash", "passed"],
        ["billing", "failed"],
        ["gone", "errored"],
      ],
    );
    assert.match(got[2]?.messages[0]?.text ?? "", /inconclusive/);
  });
  it("a whole-file refusal errors every requested example with its text and next step", () => {
    const r = report({ verdict: "refused", examples: [], refusal: { message: "the file is still being written", next: "close the Examples block" } });
    const got = outcomesFor(r, ["a", "b"]);
    for (const o of got) {
      assert.equal(o.kind, "errored");
      assert.equal(o.messages[0]?.text, "refused: the file is still being written\nclose the Examples block");
    }
  });
  it("no report is inconclusive, never passed", () => {
    assert.deepEqual(
      outcomesFor(undefined, ["a"]).map((o) => o.kind),
      ["errored"],
    );
  });
  it("ad-hoc answers never stand in for an example", () => {
    const got = outcomesFor(report({ examples: [ex({ id: "a", adHoc: true, verdict: "answered" })] }), ["a"]);
    assert.equal(got[0]?.kind, "errored");
  });
});

describe("summaries", () => {
  const cases: { name: string; r: Report; want: string }[] = [
    { name: "counts with inconclusive", r: report({}), want: "fail: 1 pass, 1 fail, 1 inconclusive (local preview)" },
    { name: "refusal", r: report({ refusal: { message: "no endpoint" } }), want: "kmx refused: no endpoint" },
    { name: "unknown file verdict reads inconclusive", r: report({ verdict: "unknown", summary: { pass: 0, fail: 0, unknown: 1, refused: 0 } }), want: "inconclusive: 0 pass, 0 fail, 1 inconclusive (local preview)" },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(summaryLine(c.r), c.want));
  }
  it("tool lines name the frozen settings and each example's sources, never results", () => {
    const r = report({
      toolSettings: [{ name: "github_list_merged_prs", state: "Enabled" }],
      examples: [ex({ id: "recorded", toolCalls: 1, toolSources: [{ name: "github_list_merged_prs", source: "recorded" }] }), ex({ id: "quiet" })],
    });
    assert.deepEqual(toolLines(r), ["tools: github_list_merged_prs Enabled", "recorded: 1 tool call: github_list_merged_prs (recorded)"]);
    assert.deepEqual(toolLines(report({})), []);
  });
  it("tool lines name the stubbed tools once, with the next step", () => {
    const r = report({
      examples: [ex({ id: "a", toolCalls: 1, toolSources: [{ name: "edit/editFiles", source: "unavailable" }] })],
      stubbed: { tools: ["edit/editFiles"], examples: ["a"], message: "answered \"This tool is not available in this test.\"", next: "give each a real result with a recording" },
    });
    assert.deepEqual(toolLines(r), [
      "a: 1 tool call: edit/editFiles (unavailable)",
      "stubbed: edit/editFiles answered \"This tool is not available in this test.\"",
      "next: give each a real result with a recording",
    ]);
  });
  it("run verdict shows the answer on one line", () => {
    const r = report({ command: "run", examples: [ex({ id: "crash", answer: "bug\nreport" })] });
    assert.equal(runVerdictText(r), 'kmx example "crash": pass — answer: bug report (local preview)');
  });
  it("run verdict of a refused input shows the refusal, one line", () => {
    const r = report({ command: "run", examples: [], refusal: { message: "the input looks like a credential (GitHub token)", next: "remove it" } });
    assert.equal(runVerdictText(r), "refused: the input looks like a credential (GitHub token) remove it");
  });
});

describe("flakyText", () => {
  it("marks mixed trial outcomes as flaky k/N and says so in the failure message", () => {
    const flaky = ex({
      id: "wobbly",
      verdict: "fail",
      message: "flaky 3/5 passed (3 pass, 2 fail, 0 unknown); trial 2: 1 of 1 assertions failed (#1)",
      trials: { n: 5, pass: 3, fail: 2, unknown: 0, judgeSplits: 0, flaky: true },
    });
    assert.equal(flakyText(flaky), "flaky 3/5");
    const o = outcomeOf(flaky);
    assert.equal(o.kind, "failed");
    assert.ok(o.messages.some((m) => m.text.includes("flaky 3/5")), JSON.stringify(o.messages));
  });
  it("is undefined for steady trials and plain tests", () => {
    assert.equal(flakyText(ex({ trials: { n: 5, pass: 5, fail: 0, unknown: 0, judgeSplits: 0, flaky: false } })), undefined);
    assert.equal(flakyText(ex({})), undefined);
    assert.equal(flakyText(undefined), undefined);
  });
});

describe("turnOutcomes", () => {
  // The sidecar's report of a 3-turn example whose second turn failed.
  const script = ex({
    id: "script",
    verdict: "fail",
    message: "turn 2 of 3: 1 of 2 assertions failed (#2); 1 later turn(s) not run",
    usage: { promptTokens: 75, completionTokens: 23, totalTokens: 98 },
    turns: [
      { turn: 1, verdict: "pass", journaled: true, verified: true, durationMs: 4, range: rng(12), usage: { promptTokens: 27, completionTokens: 17, totalTokens: 44 } },
      {
        turn: 2,
        verdict: "fail",
        message: "1 of 2 assertions failed (#2)",
        journaled: true,
        verified: true,
        range: rng(15),
        deciding: 1,
        decidingRange: rng(18),
        assertions: [
          { index: 0, type: "contains", outcome: "pass", expected: "Turn 2:", message: "the answer contains the expected text" },
          { index: 1, type: "contains", outcome: "fail", expected: "never said", actual: "Turn 2: Second message", message: "the answer does not contain the expected text" },
        ],
      },
      { turn: 3, verdict: "not run", message: "not run: turn 2 did not pass", journaled: false, verified: false, range: rng(19) },
    ],
  });
  it("gives each turn its own verdict: passed, failed with its assertion's diff, not run as skipped", () => {
    const got = turnOutcomes(script);
    assert.deepEqual(
      got.map((o) => [o.id, o.kind]),
      [
        ["turn:1", "passed"],
        ["turn:2", "failed"],
        ["turn:3", "skipped"],
      ],
    );
    const fail = got[1]?.messages[0];
    assert.equal(fail?.text, "failed: assertion 2 (contains) fail: the answer does not contain the expected text");
    assert.equal(fail?.expected, "never said");
    assert.equal(fail?.actual, "Turn 2: Second message");
    assert.equal(fail?.range?.start.line, 18);
    assert.match(got[1]?.messages[1]?.text ?? "", /^script turn 2: failed: 1 of 2 assertions failed/);
    assert.equal(got[2]?.messages[0]?.text, "script turn 3: not run: turn 2 did not pass");
    // The example itself is the whole script's verdict.
    assert.equal(outcomeOf(script).kind, "failed");
  });
  it("never passes a turn that was not journaled and replay-verified, nor an unknown one", () => {
    const got = turnOutcomes(
      ex({
        turns: [
          { turn: 1, verdict: "pass", journaled: true, verified: false },
          { turn: 2, verdict: "unknown", message: "the route reported no usage", journaled: true, verified: true },
          { turn: 3, verdict: "maybe", journaled: true, verified: true },
        ],
      }),
    );
    assert.deepEqual(
      got.map((o) => o.kind),
      ["errored", "errored", "errored"],
    );
    assert.match(got[1]?.messages[0]?.text ?? "", /inconclusive \(unknown, not a pass\)/);
  });
  it("is empty for a one-turn example", () => {
    assert.deepEqual(turnOutcomes(ex({})), []);
  });
  it("over trials shows each turn folded over the trials by the server: its verdict, a flaky mark and what each trial did", () => {
    const trials = (pass: number, fail: number, unknown: number, notRun: number) => ({ n: 3, pass, fail, unknown, judgeSplits: 0, flaky: [pass, fail, unknown].filter((k) => k > 0).length > 1, notRun });
    const folded = ex({
      id: "script",
      verdict: "fail",
      trials: { n: 3, pass: 2, fail: 1, unknown: 0, judgeSplits: 0, flaky: true },
      turns: [
        { turn: 1, verdict: "pass", message: "all 3 trials passed", journaled: true, verified: true, trials: trials(3, 0, 0, 0) },
        { turn: 2, verdict: "fail", message: "flaky 2/3 passed (2 pass, 1 fail, 0 unknown); trial 1: pass; trial 2: fail: 1 of 1 assertions failed (#1); trial 3: pass", journaled: true, verified: true, trials: trials(2, 1, 0, 0) },
        { turn: 3, verdict: "unknown", message: "2/3 trials passed (2 pass, 0 fail, 0 unknown, 1 not run); trial 1: pass; trial 2: not run: turn 2 did not pass; trial 3: pass", journaled: false, verified: false, trials: trials(2, 0, 0, 1) },
      ],
    });
    const got = turnOutcomes(folded);
    assert.deepEqual(
      got.map((o) => o.kind),
      ["passed", "failed", "errored"],
    );
    // A line per trial.
    assert.match(got[1]?.messages.at(-1)?.text ?? "", /\ntrial 2: fail: 1 of 1 assertions failed \(#1\)\ntrial 3: pass/);
    assert.match(got[2]?.messages.at(-1)?.text ?? "", /\ntrial 2: not run: turn 2 did not pass\n/);
    assert.deepEqual(
      (folded.turns ?? []).map((t) => flakyText(t)),
      [undefined, "flaky 2/3", undefined],
    );
  });
});

describe("usage", () => {
  it("shows the tokens the route reported, the judge's apart, and each turn's", () => {
    const e = ex({
      id: "script",
      usage: { promptTokens: 75, completionTokens: 23, totalTokens: 98 },
      judgeUsage: { promptTokens: 30, completionTokens: 10, totalTokens: 40 },
      turns: [
        { turn: 1, verdict: "pass", journaled: true, verified: true, usage: { promptTokens: 27, completionTokens: 17, totalTokens: 44 } },
        { turn: 2, verdict: "not run", journaled: false, verified: false },
      ],
    });
    assert.deepEqual(usageLines(e), [
      { text: "script: tokens: agent 98 tokens (prompt 75, completion 23) · judge 40 tokens (prompt 30, completion 10)" },
      { turn: 1, text: "script turn 1: tokens: agent 44 tokens (prompt 27, completion 17)" },
    ]);
    assert.equal(usageMark(e.usage, e.judgeUsage), "98 tokens · judge 40 tokens");
  });
  it("is absent, never 0, when the route reported no usage", () => {
    const none = ex({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, unreported: 1 } });
    assert.equal(usageText(none.usage), undefined);
    assert.equal(usageText(undefined), undefined);
    assert.equal(usageMark(none.usage, undefined), undefined);
    assert.deepEqual(usageLines(none), []);
  });
  it("says a sum is a lower bound when some turns reported none", () => {
    assert.equal(usageText({ promptTokens: 10, completionTokens: 2, totalTokens: 12, unreported: 1 }), "12 tokens (prompt 10, completion 2); a lower bound: 1 turn reported no usage");
  });
});

describe("file assertion evidence", () => {
  // The report of an example run on a fixture workspace: paths only; the
  // reply's fileEvidence has each failed file assertion's two sides.
  const wrong = ex({
    id: "wrong",
    verdict: "fail",
    message: "2 of 3 assertions failed (#1, #3)",
    deciding: 0,
    decidingRange: rng(30),
    assertions: [
      { index: 0, type: "fileContains", outcome: "fail", expected: "calc/add.go", message: "calc/add.go does not contain the text" },
      { index: 1, type: "fileMatches", outcome: "pass", expected: "calc/add.go", message: "calc/add.go matches the pattern" },
      { index: 2, type: "filesChanged", outcome: "fail", message: "changed: [calc/add.go]; expected exactly: [README.md, calc/add.go]" },
    ],
  });
  const evidence = [
    { example: "wrong", assertion: 0, expected: "return b + a", actual: "package calc\n\treturn a + b\n" },
    { example: "wrong", assertion: 2, expected: "README.md\ncalc/add.go\n", actual: "calc/add.go\n" },
    { example: "other", assertion: 1, expected: "x", actual: "y" },
  ];
  it("shows the deciding file assertion as a diff of the text against the file's content, and every other failed one after it", () => {
    const [o] = outcomesFor(report({ examples: [wrong] }), ["wrong"], evidence);
    assert.equal(o?.kind, "failed");
    const m = o?.messages ?? [];
    assert.equal(m[0]?.text, "failed: assertion 1 (fileContains) fail: calc/add.go does not contain the text");
    assert.equal(m[0]?.expected, "return b + a");
    assert.equal(m[0]?.actual, "package calc\n\treturn a + b\n");
    assert.equal(m[0]?.range?.start.line, 30);
    assert.equal(m[1]?.text, "failed too: assertion 3 (filesChanged) fail: changed: [calc/add.go]; expected exactly: [README.md, calc/add.go]");
    assert.equal(m[1]?.expected, "README.md\ncalc/add.go\n");
    assert.equal(m[1]?.actual, "calc/add.go\n");
    assert.match(m[2]?.text ?? "", /^wrong: failed/);
    assert.equal(m.length, 3, "a passing assertion or another example's evidence adds no message");
  });
  it("without evidence a file assertion names its path in words, no diff", () => {
    const [o] = outcomesFor(report({ examples: [wrong] }), ["wrong"]);
    assert.equal(o?.messages[0]?.expected, "calc/add.go");
    assert.equal(o?.messages[0]?.actual, undefined);
    assert.equal(o?.messages.length, 2);
  });
});
