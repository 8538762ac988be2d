// Multi-turn examples in a real VS Code (docs/agent-file.md, issue 28):
// the Run example lens runs the whole script, and the Test Explorer shows
// the example with a child per turn, each with its own verdict (the
// second turn fails, so the third is not run: skipped, never passed) and
// the fake model's token usage. Registered into vscode.e2e.cjs's one
// browser session with its helpers.
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

module.exports = function register(h) {
  const { step, palette, shot } = h;
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
};
