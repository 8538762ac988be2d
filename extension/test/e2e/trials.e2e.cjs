// Trials, re-grade and compare in a real VS Code (docs/trials.md,
// docs/regrade.md): the "Test file ×5" profile marks an example whose
// answers alternate as flaky, the Re-grade last run lens grades the
// journaled answers again with zero model requests, and the replay panel's
// "Compare with previous run of this file" renders the comparison.
// Registered into vscode.e2e.cjs's one browser session with its helpers.
"use strict";
const assert = require("node:assert/strict");
const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");
const { after } = require("node:test");

const wobbly = [
  "---",
  "name: wobbly",
  "model: wobble-model",
  "---",
  "You answer yes.",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: wobbly",
  "  input: wobbly question",
  "  assert:",
  "    - contains: yes",
  "- id: steady",
  "  input: steady question",
  "  assert:",
  "    - contains: steady",
  "```",
  "",
].join("\n");

module.exports = function register(h) {
  const { step, palette, shot, setMachineSetting, runWithProfile } = h;
  // Each step after the first needs the one before it: once one fails,
  // the rest say so instead of waiting out their timeouts.
  let failed = "";
  function chained(name, timeoutMs, fn) {
    step(name, timeoutMs, async () => {
      if (failed !== "") {
        throw new Error(`not run: it needs "${failed}", which failed`);
      }
      try {
        await fn();
      } catch (err) {
        failed = name;
        throw err;
      }
    });
  }
  const page = () => h.page();

  // A local OpenAI-compatible endpoint (the edge of the world) that counts
  // requests and alternates its answer to "wobbly question": yes, no, yes,
  // … Five trials get three yes and two no in any order, so the example is
  // flaky 3/5 whatever the concurrency.
  const seen = new Map();
  let requests = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const b = JSON.parse(body);
      const input = b.messages[b.messages.length - 1].content;
      requests += 1;
      const n = (seen.get(input) ?? 0) + 1;
      seen.set(input, n);
      const content = input === "wobbly question" && n % 2 === 0 ? "no" : `yes: ${input}`;
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ id: "c", object: "chat.completion", model: b.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }] }));
    });
  });
  after(() => {
    setMachineSetting("kmx.endpoint", "");
    server.closeAllConnections();
    server.close();
  });

  function lens(text) {
    return page().locator(".editor-group-container.active .codelens-decoration a", { hasText: text });
  }

  // The frame of a webview whose page has all of the texts, polling: other
  // webviews (chat, an earlier replay) may be open beside it.
  async function webviewWith(texts, timeoutMs) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      for (const f of page().frames()) {
        const t = await f.locator("body").innerText({ timeout: 500 }).catch(() => "");
        if (texts.every((x) => t.includes(x))) {
          return { frame: f, text: t };
        }
      }
      if (Date.now() > until) {
        throw new Error(`no webview shows ${JSON.stringify(texts)}`);
      }
      await page().waitForTimeout(500);
    }
  }

  chained("Test file ×5 marks the example whose answers alternate as flaky 3/5", 180_000, async () => {
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    setMachineSetting("kmx.endpoint", `http://127.0.0.1:${server.address().port}/v1`);
    await palette("View: Close All Editors");
    const dir = path.join(process.env.KMX_E2E_WORKSPACE, "trials");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "wobbly.agent.md"), wobbly);
    await page().waitForTimeout(1_500);
    // From the Explorer: Quick Open's file index may not have the new
    // folder yet.
    await palette("View: Show Explorer");
    const explorer = page().locator(".explorer-folders-view .monaco-list-row");
    const fileInTree = explorer.filter({ hasText: "wobbly.agent.md" }).first();
    if ((await fileInTree.count()) === 0) {
      await explorer.filter({ hasText: /^trials$/ }).first().click({ timeout: 30_000 });
    }
    await fileInTree.click({ timeout: 30_000 });
    await page().locator(".tabs-container .tab.active", { hasText: "wobbly.agent.md" }).first().waitFor({ timeout: 15_000 });
    await lens("▶ Test file").first().waitFor({ timeout: 60_000 });

    await palette("Testing: Focus on Test Explorer View");
    const rows = page().locator(".test-explorer .monaco-list-row");
    const fileRow = rows.filter({ hasText: "trials/wobbly.agent.md" }).first();
    await fileRow.waitFor({ timeout: 30_000 });
    await runWithProfile(fileRow, "Test file ×5");

    if ((await rows.filter({ hasText: /^steady/ }).count()) === 0) {
      await fileRow.locator(".monaco-tl-twistie").click();
    }
    const flaky = rows.filter({ hasText: /^wobbly/ }).first();
    await flaky.locator(".codicon-testing-failed-icon").waitFor({ timeout: 60_000 });
    await rows.filter({ hasText: /^steady/ }).first().locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await flaky.getByText("flaky 3/5").waitFor({ timeout: 10_000 });
    assert.equal(requests, 10, "five trials of two examples are ten requests");
    await shot("trials-flaky-3-of-5");
    // The failure message says it too.
    await flaky.click();
    await palette("Test: Peek Output");
    await page().getByText(/flaky 3\/5 passed/).first().waitFor({ timeout: 15_000 });
    await page().keyboard.press("Escape");
  });

  chained("Re-grade last run grades the journaled answers again with zero model requests", 120_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await page().locator(".tabs-container .tab", { hasText: "wobbly.agent.md" }).first().click();
    const before = requests;
    await lens("Re-grade last run").first().click({ timeout: 60_000 });
    const toast = page().locator(".notifications-toasts .notification-toast", { hasText: "re-grade of run" });
    await toast.first().waitFor({ timeout: 60_000 });
    const text = await toast.first().innerText();
    assert.match(text, /re-grade of run \S+: 0 agent model calls · 2 answers replayed from it/);
    assert.match(text, /local preview/);
    assert.equal(requests, before, "the re-grade sent a model request");
    // The result is on the items like any Test: steady passed again.
    await palette("Testing: Focus on Test Explorer View");
    const rows = page().locator(".test-explorer .monaco-list-row");
    await rows.filter({ hasText: /^steady/ }).first().locator(".codicon-testing-passed-icon").waitFor({ timeout: 10_000 });
    await shot("regrade-zero-calls");
  });

  chained("the replay panel compares the re-grade with the run before it", 120_000, async () => {
    await palette("Notifications: Clear All Notifications");
    await page().locator(".tabs-container .tab", { hasText: "wobbly.agent.md" }).first().click();
    const before = requests;
    // The lens names the newest run once the server's code lens refresh
    // (sent when the re-grade ended) has been answered.
    await page().waitForTimeout(2_000);
    await lens("Replay last run").first().click({ timeout: 60_000 });
    const replay = await webviewWith(["local preview journal replay; not a test result", "Compare with previous run of this file", "steady question"], 30_000);
    await replay.frame.locator("#compare").click();
    const cmp = await webviewWith(["local preview journal comparison; not a test result", "re-grade of run A"], 30_000);
    // Run A is the ×5 test: five trials per example, each with its verdict.
    assert.match(cmp.text, /5 trials per example/);
    assert.match(cmp.text, /A#5/);
    assert.match(cmp.text, /live model calls while comparing: 0/);
    assert.equal(requests, before, "comparing runs sent a model request");
    await shot("compare-view");
    setMachineSetting("kmx.endpoint", "");
  });
};
