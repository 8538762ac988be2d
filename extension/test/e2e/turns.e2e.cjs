// Multi-turn examples and fixture workspaces in a real VS Code
// (docs/agent-file.md, issues 28 and 27): the Run example lens runs the
// whole script, and the Test Explorer shows the example with a child per
// turn, each with its own verdict (the second turn fails, so the third is
// not run: skipped, never passed) and the fake model's token usage; an
// agent that edits a copy of its fixture, tested from the lens, shows its
// file assertions, a failing one as an expected/actual diff; the "Test
// file ×5" profile marks each turn's child with its outcome over the
// trials. Registered
// into vscode.e2e.cjs's one browser session with its helpers.
"use strict";
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

// On the fake model: "Reply with the turn number" answers "Turn N: INPUT",
// N counting the user messages sent, so turn 2 shows it got turn 1 as its
// history. Turn 2 of "script" asks for a phrase no answer holds.
const script = [
  "---",
  "name: script",
  "model: fake",
  "---",
  "You talk in turns.",
  "Reply with the turn number",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: script",
  "  turns:",
  "    - input: Hello there, first of three",
  "      assert:",
  '        - contains: "Turn 1:"',
  "    - input: Second message",
  "      assert:",
  '        - contains: "Turn 2:"',
  "        - contains: never said",
  "    - input: Third message",
  "      assert:",
  '        - contains: "Turn 3:"',
  "- id: chat",
  "  turns:",
  "    - input: One",
  "      assert:",
  '        - contains: "Turn 1: One"',
  "    - input: Two",
  "      assert:",
  '        - contains: "Turn 2: Two"',
  "```",
  "",
].join("\n");

// The fix-add demo (testdata/demo), with a second example whose file
// assertions fail: the fake model's edit makes "return a + b", not
// "return b + a", and changes calc/add.go only.
function fixAdd() {
  const demo = path.join(__dirname, "..", "..", "..", "testdata", "demo");
  const text = fs.readFileSync(path.join(demo, "fix-add.agent.md"), "utf8");
  const wrong = [
    "- id: wrong-fix",
    "  input: Add returns the wrong sum; fix it.",
    "  assert:",
    '    - fileContains: {path: calc/add.go, text: "return b + a"}',
    "    - filesChanged: [calc/add.go, README.md]",
    "```",
  ].join("\n");
  const at = text.lastIndexOf("```");
  return { demo, text: `${text.slice(0, at)}${wrong}${text.slice(at + 3)}` };
}

module.exports = function register(h) {
  const { step, palette, shot, runWithProfile } = h;
  const page = () => h.page();

  function lens(text) {
    return page().locator(".editor-group-container.active .codelens-decoration a", { hasText: text });
  }

  // Opens a file the test wrote a moment ago from the Explorer (Quick
  // Open's index may not have its folder yet).
  async function openFromExplorer(folder, name) {
    await palette("View: Show Explorer");
    const explorer = page().locator(".explorer-folders-view .monaco-list-row");
    const fileInTree = explorer.filter({ hasText: name }).first();
    const folderInTree = explorer.filter({ hasText: new RegExp(`^${folder}$`) }).first();
    // The file watcher may not have reported the new folder yet.
    for (let i = 0; (await fileInTree.count()) === 0 && (await folderInTree.count()) === 0; i += 1) {
      if (i >= 20) {
        throw new Error(`the Explorer does not show the folder ${folder}`);
      }
      await page().locator(".pane-header .action-label[aria-label='Refresh Explorer']").first().click({ timeout: 5_000 }).catch(() => undefined);
      await page().waitForTimeout(1_000);
    }
    if ((await fileInTree.count()) === 0) {
      await folderInTree.click({ timeout: 30_000 });
    }
    await fileInTree.click({ timeout: 30_000 });
    await page().locator(".tabs-container .tab.active", { hasText: name }).first().waitFor({ timeout: 15_000 });
  }

  // The Test Explorer's rows, with the item labelled `parent` expanded.
  async function expanded(parentText, childText) {
    const rows = page().locator(".test-explorer .monaco-list-row");
    const parent = rows.filter({ hasText: parentText }).first();
    await parent.waitFor({ timeout: 30_000 });
    if ((await rows.filter({ hasText: childText }).count()) === 0) {
      await parent.locator(".monaco-tl-twistie").click();
    }
    await rows.filter({ hasText: childText }).first().waitFor({ timeout: 30_000 });
    return rows;
  }

  step("a multi-turn example: Run example runs the whole script; the Test Explorer shows a child per turn, the second failing", 180_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await palette("View: Close All Editors");
    const dir = path.join(process.env.KMX_E2E_WORKSPACE, "turns");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "script.agent.md"), script);
    await page().waitForTimeout(1_500);
    await openFromExplorer("turns", "script.agent.md");
    const run = lens("▶ Run example");
    await run.first().waitFor({ timeout: 60_000 });
    // The first lens is the "script" example's: the whole script runs, and
    // fails on its second turn.
    await run.first().click();
    const toast = page().locator(".notifications-toasts .notification-toast", { hasText: 'kmx example "script": fail' });
    await toast.first().waitFor({ timeout: 60_000 });
    assert.match(await toast.first().innerText(), /turn 2 of 3/);

    await palette("Testing: Focus on Test Explorer View");
    let rows = await expanded("turns/script.agent.md", /^script/);
    rows = await expanded(/^script/, "turn 2: Second message");
    const t1 = rows.filter({ hasText: "turn 1: Hello there, first of three" }).first();
    const t2 = rows.filter({ hasText: "turn 2: Second message" }).first();
    const t3 = rows.filter({ hasText: "turn 3: Third message" }).first();
    await rows.filter({ hasText: /^script/ }).first().locator(".codicon-testing-failed-icon").waitFor({ timeout: 30_000 });
    await t1.locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await t2.locator(".codicon-testing-failed-icon").waitFor({ timeout: 10_000 });
    // Not run is skipped: never passed, never failed.
    await t3.locator(".codicon-testing-skipped-icon").waitFor({ timeout: 10_000 });
    assert.equal(await t3.locator(".codicon-testing-passed-icon").count(), 0, "a turn that was not run shows as passed");
    // The fake model's usage (one token per four bytes), on the turns
    // that ran and the example; none on the turn that did not run.
    await t1.getByText(/\d+ tokens/).waitFor({ timeout: 10_000 });
    assert.doesNotMatch(await t3.innerText(), /tokens/, "a turn that did not run shows token usage");
    await rows.filter({ hasText: /^script/ }).first().getByText(/3 turns · \d+ tokens/).waitFor({ timeout: 10_000 });
    await shot("turns-child-per-turn");
    // The failing turn's own message, in the peek on its "- input:" line.
    await t2.click();
    await palette("Test: Peek Output");
    await page().locator(".peekview-widget", { hasText: "script turn 2: failed: 1 of 2 assertions failed (#2)" }).first().waitFor({ timeout: 15_000 });
    await shot("turns-failing-turn-peek");
    await page().keyboard.press("Escape");
  });

  step("running a turn's item in the Test Explorer runs its whole example", 120_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await palette("Testing: Focus on Test Explorer View");
    const rows = await expanded(/^chat/, "turn 2: Two");
    const t2 = rows.filter({ hasText: "turn 2: Two" }).first();
    // From the item's context menu; the hovered item has the menu's focus.
    for (let attempt = 1; ; attempt += 1) {
      await t2.click({ button: "right" });
      const item = page().locator(".monaco-menu .action-label", { hasText: /^Run Test$/ }).first();
      try {
        await item.waitFor({ timeout: 5_000 });
        await item.hover();
        await page().keyboard.press("Enter");
        break;
      } catch (err) {
        await page().keyboard.press("Escape");
        if (attempt >= 3) {
          throw err;
        }
      }
    }
    // Turn 2 passes only if turn 1 ran before it as its history.
    await t2.locator(".codicon-testing-passed-icon").waitFor({ timeout: 60_000 });
    await rows.filter({ hasText: "turn 1: One" }).first().locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await rows.filter({ hasText: /^chat/ }).first().locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await shot("turns-run-a-turn");
  });

  step("Test file ×5 on multi-turn examples: each turn's child shows its outcome over the five trials, none skipped but the turn no trial sent", 180_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await palette("Testing: Focus on Test Explorer View");
    const rows = page().locator(".test-explorer .monaco-list-row");
    const fileRow = rows.filter({ hasText: "turns/script.agent.md" }).first();
    await fileRow.waitFor({ timeout: 30_000 });
    await runWithProfile(fileRow, "Test file ×5");
    let all = await expanded(/^script/, "turn 3: Third message");
    all = await expanded(/^chat/, "turn 2: Two");
    const row = (text) => all.filter({ hasText: text }).first();
    // The failing turn's message says what happened in each of the five
    // trials (which also tells the trials run has ended: the items showed
    // the earlier runs' results before it).
    await row("turn 2: Second message").locator(".codicon-testing-failed-icon").waitFor({ timeout: 60_000 });
    await row("turn 2: Second message").click();
    await palette("Test: Peek Output");
    const peek = page().locator(".peekview-widget", { hasText: "0/5 trials passed" }).first();
    await peek.waitFor({ timeout: 30_000 });
    // A line per trial; the peek's editor renders spaces as no-break ones.
    const said = (await peek.innerText()).replace(/\u00a0/g, " ");
    assert.match(said, /trial 1: fail: 1 of 2 assertions failed/);
    assert.match(said, /trial 5: fail: 1 of 2 assertions failed/);
    await shot("turns-trials-failing-turn-peek");
    await page().keyboard.press("Escape");
    // chat: both turns passed in all five trials.
    await row("turn 1: One").locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await row("turn 2: Two").locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    // script: turn 1 passed in every trial, turn 2 failed in every trial,
    // turn 3 was sent in none (skipped, never passed).
    await row("turn 1: Hello there, first of three").locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await row("turn 3: Third message").locator(".codicon-testing-skipped-icon").waitFor({ timeout: 10_000 });
    for (const text of ["turn 1: One", "turn 2: Two", "turn 1: Hello there, first of three", "turn 2: Second message"]) {
      assert.equal(await row(text).locator(".codicon-testing-skipped-icon").count(), 0, `${text} is shown skipped after a trials run`);
    }
    // Usage summed over the five trials, on a turn that ran.
    await row("turn 1: One").getByText(/\d+ tokens/).waitFor({ timeout: 10_000 });
    await shot("turns-trials-turn-children");
  });

  step("a fixture workspace agent tested from the lens: the Test Explorer shows its file assertions, a failing one as an expected/actual diff", 180_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await palette("View: Close All Editors");
    const dir = path.join(process.env.KMX_E2E_WORKSPACE, "fix");
    const { demo, text } = fixAdd();
    fs.cpSync(path.join(demo, "fixtures"), path.join(dir, "fixtures"), { recursive: true });
    fs.writeFileSync(path.join(dir, "fix-add.agent.md"), text);
    const fixture = fs.readFileSync(path.join(dir, "fixtures", "calc", "calc", "add.go"), "utf8");
    await page().waitForTimeout(1_500);
    await openFromExplorer("fix", "fix-add.agent.md");
    await lens("▶ Test file").first().waitFor({ timeout: 60_000 });
    await lens("▶ Test file").first().click();
    const toast = page().locator(".notifications-toasts .notification-toast", { hasText: "kmx fix/fix-add.agent.md: fail: 1 pass, 1 fail" });
    await toast.first().waitFor({ timeout: 60_000 });
    // The edits went to a scratch copy: the user's fixture is untouched.
    assert.equal(fs.readFileSync(path.join(dir, "fixtures", "calc", "calc", "add.go"), "utf8"), fixture);

    await palette("Testing: Focus on Test Explorer View");
    const rows = await expanded("fix/fix-add.agent.md", /^wrong-fix/);
    const pass = rows.filter({ hasText: /^fix-add/ }).first();
    const fail = rows.filter({ hasText: /^wrong-fix/ }).first();
    await pass.locator(".codicon-testing-passed-icon").waitFor({ timeout: 30_000 });
    await fail.locator(".codicon-testing-failed-icon").waitFor({ timeout: 10_000 });
    // Each item lists its assertions: the file assertions by name.
    await pass.getByText(/fileContains, fileNotContains, fileMatches, fileUnchanged, filesChanged/).waitFor({ timeout: 10_000 });
    await fail.getByText(/fileContains, filesChanged/).waitFor({ timeout: 10_000 });
    await shot("workspace-file-assertions");

    // The failing fileContains as a diff: the expected text against the
    // file's final content in the scratch copy, in the peek's diff editor.
    await fail.click();
    await palette("Test: Peek Output");
    const peek = page().locator(".peekview-widget").first();
    await peek.waitFor({ timeout: 15_000 });
    const diff = peek.locator(".monaco-diff-editor");
    for (let i = 0; (await diff.count()) === 0; i += 1) {
      if (i >= 4) {
        throw new Error(`the peek shows no diff: ${await peek.innerText()}`);
      }
      // The first message the peek opens on may be the example line's;
      // the next is the deciding assertion's diff.
      await peek.locator(".action-label.codicon-arrow-down, .action-label[aria-label*='Next']").first().click({ timeout: 5_000 });
      await page().waitForTimeout(500);
    }
    await diff.first().waitFor({ timeout: 10_000 });
    const shown = await peek.innerText();
    assert.match(shown, /fileContains/);
    await diff.locator(".view-line", { hasText: "return b + a" }).first().waitFor({ timeout: 10_000 });
    await diff.locator(".view-line", { hasText: "return a + b" }).first().waitFor({ timeout: 10_000 });
    await shot("workspace-file-assertion-diff");
    await page().keyboard.press("Escape");
  });
};
