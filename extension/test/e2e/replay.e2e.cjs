// The replay panel in a real VS Code (issues 27, 28 and 29): a workspace
// example's replay shows each call and the diff of the file it changed; a
// multi-turn example's replay shows each turn with its verdict and the
// tokens per turn and per example; Compare Models on two models of the
// test provider renders the grid, and its link opens the compare view
// (answers side by side, line diff) read back from the journals with zero
// model calls. Registered into vscode.e2e.cjs's one browser session.
"use strict";
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

// The fix-add demo (testdata/demo) under names of its own: the fake model
// reads calc/add.go, then edits it in the example's scratch copy.
const demo = path.join(__dirname, "..", "..", "..", "testdata", "demo");

// The fake model answers "Turn N: INPUT": script passes its three turns,
// halts fails its second, so its third is never sent.
const script = [
  "---",
  "name: panel-script",
  "model: fake",
  "---",
  "Reply with the turn number",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: script",
  "  turns:",
  "    - input: first question",
  "      assert: [contains: 'Turn 1: first question']",
  "    - input: second question",
  "      assert: [contains: 'Turn 2: second question']",
  "    - input: third question",
  "      assert: [contains: 'Turn 3: third question', maxTokens: 100000]",
  "- id: halts",
  "  turns:",
  "    - input: go",
  "      assert: [contains: 'Turn 1: go']",
  "    - input: stop",
  "      assert: [contains: 'Turn 9']",
  "    - input: never sent",
  "      assert: [contains: never]",
  "```",
  "",
].join("\n");

// KMX Good answers "Release notes: INPUT", KMX Brief "Notes: INPUT": both
// pass agree, only KMX Good passes disagree.
const compared = [
  "---",
  "name: panel-compared",
  "model: fake",
  "---",
  "Reply with release notes for the input",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: agree",
  "  input: today",
  "  assert:",
  "    - contains: today",
  "- id: disagree",
  "  input: this week",
  "  assert:",
  '    - contains: "Release notes:"',
  "```",
  "",
].join("\n");

module.exports = function register(h) {
  const { step, palette, shot } = h;
  const page = () => h.page();
  const workspace = process.env.KMX_E2E_WORKSPACE;
  const providerLog = process.env.KMX_E2E_PROVIDER_LOG;

  function sends() {
    const text = fs.existsSync(providerLog) ? fs.readFileSync(providerLog, "utf8") : "";
    return text.split("\n").filter((l) => l.startsWith("send ")).length;
  }

  function lens(text) {
    return page().locator(".editor-group-container.active .codelens-decoration a", { hasText: text });
  }

  function toast(text) {
    return page().locator(".notifications-toasts .notification-toast", { hasText: text });
  }

  // The frame of a webview whose page has all of the texts, polling: other
  // webviews may be open beside it.
  async function webviewWith(texts, timeoutMs) {
    const until = Date.now() + timeoutMs;
    let seen = [];
    for (;;) {
      seen = [];
      for (const f of page().frames()) {
        const t = await f.locator("body").innerText({ timeout: 500 }).catch(() => "");
        if (texts.every((x) => t.includes(x))) {
          return { frame: f, text: t };
        }
        if (t.includes("local preview")) {
          seen.push(t.slice(0, 400));
        }
      }
      if (Date.now() > until) {
        throw new Error(`no webview shows ${JSON.stringify(texts)}; pages seen: ${JSON.stringify(seen)}`);
      }
      await page().waitForTimeout(500);
    }
  }

  // Opens a workspace-root file from the Explorer (Quick Open's index may
  // not have a file written a moment ago) and waits for its lenses.
  async function openFile(name) {
    await palette("View: Close All Editors");
    await page().waitForTimeout(1_000);
    await palette("View: Show Explorer");
    await page().locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click({ timeout: 30_000 });
    await page().locator(".editor-group-container.active .tab.active", { hasText: name }).first().waitFor({ timeout: 15_000 });
    await lens("▶ Test file").first().waitFor({ timeout: 60_000 });
  }

  // Tests the open file and waits for the toast that says how it ended.
  async function testFile(ended) {
    await palette("Notifications: Clear All Notifications");
    await lens("▶ Test file").first().click();
    await toast(ended).first().waitFor({ timeout: 90_000 });
  }

  // Opens the newest run's replay from the lens, once the run's end has
  // redrawn the lenses.
  async function replayLastRun(texts) {
    await page().waitForTimeout(2_000);
    await lens("Replay last run").first().click({ timeout: 60_000 });
    return webviewWith(["local preview journal replay; not a test result", ...texts], 30_000);
  }

  step("replay panel: a workspace example's replay shows each call and the diff of the file it changed, from the journal alone", 180_000, async () => {
    const agent = fs.readFileSync(path.join(demo, "fix-add.agent.md"), "utf8").replace("name: fix-add", "name: panel-fix").replace("workspace: fixtures/calc", "workspace: panel-fixtures/calc");
    assert.ok(agent.includes("panel-fixtures/calc"), "the demo names its fixture as expected");
    fs.cpSync(path.join(demo, "fixtures", "calc"), path.join(workspace, "panel-fixtures", "calc"), { recursive: true });
    fs.writeFileSync(path.join(workspace, "panel-fix.agent.md"), agent);
    const fixture = path.join(workspace, "panel-fixtures", "calc", "calc", "add.go");
    const before = fs.readFileSync(fixture, "utf8");
    await openFile("panel-fix.agent.md");
    await testFile("kmx panel-fix.agent.md: pass: 1 pass, 0 fail");
    assert.equal(fs.readFileSync(fixture, "utf8"), before, "the run wrote the user's fixture");
    // The fixture is gone before the replay: the diff comes from the journal.
    fs.rmSync(path.join(workspace, "panel-fixtures"), { recursive: true, force: true });
    const replay = await replayLastRun(["files changed", "calc/add.go"]);
    const t = replay.text;
    assert.match(t, /read\/readFile as read_readFile call 1/, "the read call");
    assert.match(t, /edit\/editFiles as edit_editFiles call 2/, "the edit call");
    assert.match(t, /workspace\s+panel-fixtures\/calc/, "the fixture");
    assert.match(t, /calc\/add\.go modified/, "the changed file");
    assert.match(t, /@@ -2,5 \+2,5 @@/, "the hunk");
    assert.match(t, /^-\treturn a - b$/m, "the removed line");
    assert.match(t, /^\+\treturn a \+ b$/m, "the added line");
    assert.match(t, /verdict \(recorded by the run\)\s+pass/, "the recorded verdict");
    assert.ok(t.includes("live model calls during replay: 0"), "the replay made no live call");
    // The diff is coloured: the added and removed lines carry their classes.
    assert.equal(await replay.frame.locator(".workspace-diff .op-add").count(), 1);
    assert.equal(await replay.frame.locator(".workspace-diff .op-del").count(), 1);
    await replay.frame.locator(".workspace-diff").first().scrollIntoViewIfNeeded();
    await shot("replay-workspace-diff");
  });

  step("replay panel: a multi-turn example's replay shows each turn with its verdict, the turn never sent, and the tokens per turn and per example", 180_000, async () => {
    fs.writeFileSync(path.join(workspace, "panel-script.agent.md"), script);
    await openFile("panel-script.agent.md");
    await testFile("kmx panel-script.agent.md: fail: 1 pass, 1 fail");
    const replay = await replayLastRun(["multi-turn, 3 turns", "example tokens"]);
    const t = replay.text;
    for (const n of [1, 2, 3]) {
      assert.ok(t.includes(`turn ${n} of 3`), `turn ${n} of 3`);
    }
    assert.match(t, /Turn 3: third question/, "the third turn's answer");
    assert.match(t, /turn 3 of 3 not run/, "halts' third turn, never sent");
    assert.match(t, /verdict \(recorded by the run\)\s+fail/, "halts failed");
    assert.match(t, /example tokens\s+\d+ \(prompt \d+, completion \d+\)/, "usage per example");
    assert.match(t, /\ntokens\s+\d+ \(prompt \d+, completion \d+\)/, "usage per turn");
    assert.match(t, /tokens: agent \d+ \(prompt \d+, completion \d+\)/, "usage of the run");
    assert.ok(!/tokens\s+0 \(/.test(t), "a zero usage shown");
    assert.ok(t.includes("live model calls during replay: 0"), "the replay made no live call");
    await shot("replay-multi-turn-usage");
  });

  step("Compare Models on two test-provider models renders the grid, and its compare view shows the answers side by side with zero model calls", 240_000, async () => {
    fs.writeFileSync(path.join(workspace, "panel-compared.agent.md"), compared);
    await openFile("panel-compared.agent.md");
    await palette("Notifications: Clear All Notifications");
    await palette("kmx: Compare Models…");
    const input = page().locator(".quick-input-widget .quick-input-box input").first();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    for (const [n, label] of [[1, "KMX Good"], [2, "KMX Brief"]]) {
      await input.fill(label);
      const row = page().locator(".quick-input-widget .monaco-list-row", { hasText: label }).first();
      await row.waitFor({ timeout: 10_000 });
      await row.locator("input[type=checkbox], .quick-input-list-checkbox, .monaco-custom-toggle").first().click();
      await page().locator(".quick-input-widget .quick-input-count", { hasText: String(n) }).first().waitFor({ timeout: 5_000 });
      await input.fill("");
    }
    const before = sends();
    await page().keyboard.press("Enter");
    await toast("kmx panel-compared.agent.md on 2 models: verdict fail; the models disagree on 1 example").first().waitFor({ timeout: 90_000 });
    assert.equal(sends() - before, 4, "two sends per model");
    const grid = await webviewWith(["The models disagree on 1 example", "kmx-test/kmx-brief (editor)"], 30_000);
    assert.ok(grid.text.includes("kmx-test/kmx-good (editor)"), grid.text);
    assert.match(grid.text, /agree\s+PASS[^\n]*\s+PASS/, "both models pass agree");
    assert.match(grid.text, /disagree\s*≠\s+PASS[^\n]*\s+FAIL/, "KMX Good passes disagree, KMX Brief fails it");
    assert.ok(grid.text.includes("2 examples × 2 models: 3 pass, 1 fail, 0 unknown"), grid.text);
    await shot("compare-two-provider-models-grid");

    const sent = sends();
    await grid.frame.locator("#answers").click();
    const view = await webviewWith(["local preview journal comparison; not a test result", "The columns disagree on 1 example (highlighted); the answers differ on 2 examples", "line diff"], 30_000);
    const t = view.text;
    assert.ok(t.includes("live model calls while comparing: 0"), "the compare view made no live call");
    assert.match(t, /disagree\s*≠\s+PASS\s+FAIL/, "the grid's verdicts, read back from the journals");
    assert.ok(t.includes("Release notes: this week") && t.includes("Notes: this week"), "both answers side by side");
    assert.match(t, /^- Release notes: this week$/m, "the first column's line");
    assert.match(t, /^\+ Notes: this week$/m, "the second column's line");
    assert.equal(sends(), sent, "the compare view sent a model request");
    await shot("compare-view-answers-side-by-side");
    await palette("View: Close All Editors");
  });
};
