// The editor route in a real VS Code: agent files on models VS Code offers,
// served by the test-only provider in lm-provider/ (installed only in the
// test profile by scripts/e2e-test.sh). Registered into vscode.e2e.cjs's one
// browser session, between its cases, with its helpers.
"use strict";
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const notes = [
  "---",
  "name: notes",
  "model: KMX Good (kmx-test)",
  "---",
  "You draft release notes.",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: weekly",
  "  input: Draft notes for this week",
  "  assert:",
  '    - contains: "Release notes:"',
  "    - llmJudge:",
  "        rubric: The answer starts with `Release notes:`",
  "- id: daily",
  "  input: Draft notes for today",
  "  assert:",
  '    - contains: "Release notes:"',
  "```",
  "",
].join("\n");

// A tool-declaring agent on a model VS Code offers: its declared name binds
// to the tool the test provider registers (vscode.lm.tools), and the call
// goes through vscode.lm.invokeTool.
const echo = [
  "---",
  "name: echo",
  "model: KMX Tools (kmx-test)",
  "tools: [kmx_test_echo]",
  "---",
  "You draft release notes. Call kmx_test_echo with the input first.",
  "",
  "## Examples",
  "",
  "```yaml",
  "- id: weekly",
  "  input: Draft notes for this week",
  "  assert:",
  "    - toolCalled: kmx_test_echo",
  '    - contains: "Release notes: Draft notes for this week"',
  "```",
  "",
].join("\n");

// A real-format agent (VS Code's own format, its examples in the file
// beside it) declaring the references `search` and `edit/editFiles`: on a
// model VS Code offers, `search/codebase` binds to the tool VS Code
// registers for it (the provider's copilot_searchCodebase, a double of
// Copilot Chat's) and is called through vscode.lm.invokeTool; nothing
// implements `edit/editFiles` in this VS Code, so it is a stub answering
// "not available in this test", never a refusal.
const fixer = [
  "---",
  "description: 'Finds the code a question is about and fixes small typos in it.'",
  "tools: ['search', 'edit/editFiles']",
  "model: KMX Agent (kmx-test)",
  "---",
  "# Typo fixer",
  "",
  "Search the codebase for the code the user names, then fix typos in it directly.",
  "",
].join("\n");
const fixerExamples = [
  "- id: typo",
  "  input: Fix the typo in DraftNotes",
  "  assert:",
  "    - toolCalled: search/codebase",
  "    - toolCalled: edit/editFiles",
  '    - contains: "src/notes.go:12 func DraftNotes"',
  "    - contains: not available in this test",
  "",
].join("\n");

// Compared on a model VS Code offers and on fake: both answer "today"
// with it, only KMX Good starts with "Release notes:", so the models
// disagree on one example.
const compared = [
  "---",
  "name: compared",
  "model: fake",
  "---",
  "Reply with exactly `Notes:` followed by the input",
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
  const { step, palette } = h;
  const workspace = process.env.KMX_E2E_WORKSPACE;
  const providerLog = process.env.KMX_E2E_PROVIDER_LOG;

  function sends(model) {
    const text = fs.existsSync(providerLog) ? fs.readFileSync(providerLog, "utf8") : "";
    return text.split("\n").filter((l) => l === `send ${model}`).length;
  }

  async function waitLog(line, timeoutMs) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const text = fs.existsSync(providerLog) ? fs.readFileSync(providerLog, "utf8") : "";
      if (text.split("\n").includes(line)) {
        return;
      }
      if (Date.now() > until) {
        throw new Error(`the provider never logged "${line}"; its log: ${JSON.stringify(text)}`);
      }
      await h.page().waitForTimeout(250);
    }
  }

  function lens(text) {
    return h.page().locator(".editor-group-container.active .codelens-decoration a", { hasText: text });
  }

  function toast(text) {
    return h.page().locator(".notifications-toasts .notification-toast", { hasText: text });
  }

  // Runs the example under the lens on a model VS Code offers and returns
  // the toast that says how it ended.
  async function runExampleOn(label, ended) {
    await palette("Notifications: Clear All Notifications");
    await selectModel(label);
    await h.page().locator(".statusbar-item", { hasText: `${label} (kmx-test)` }).first().waitFor({ timeout: 15_000 });
    await lens("▶ Run example").first().click();
    const t = toast(ended);
    await t.first().waitFor({ timeout: 60_000 });
    return t;
  }

  async function selectModel(label) {
    const page = h.page();
    await palette("kmx: Select Model");
    const input = page.locator(".quick-input-widget .quick-input-box input").first();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill(label);
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press("Enter");
  }

  // Opens a workspace-root file in the active editor: its tab when it has
  // one, else from the Explorer (Quick Open's file index may not have a
  // file written a moment ago), then shows the Test Explorer again as
  // before.
  async function openFile(name) {
    const page = h.page();
    await page.keyboard.press("Escape");
    const tab = page.locator(".editor-group-container.active .tabs-container .tab", { hasText: name }).first();
    if ((await tab.count()) > 0) {
      await tab.click();
    } else {
      await palette("View: Show Explorer");
      await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click({ timeout: 30_000 });
      await palette("Testing: Focus on Test Explorer View");
    }
    await page.locator(".editor-group-container.active .tab.active", { hasText: name }).first().waitFor({ timeout: 15_000 });
    await lens("▶ Test file").first().waitFor({ timeout: 60_000 });
  }

  step("editor route: Test file passes on a model VS Code offers, with no endpoint, judged there too", 180_000, async () => {
    fs.writeFileSync(path.join(workspace, "notes.agent.md"), notes);
    await palette("Notifications: Clear All Notifications");
    await openFile("notes.agent.md");
    await lens("▶ Test file").first().click();
    const done = toast("kmx notes.agent.md: pass: 2 pass, 0 fail (local preview)");
    await done.first().waitFor({ timeout: 90_000 });
    // Two examples and two judge samples, each sent once to the test model.
    assert.equal(sends("kmx-good"), 4, "sends to KMX Good (two agent turns, two judge samples)");
    // The run's end redraws the lenses (workspace/codeLens/refresh), and a
    // click that lands while they are redrawn hits a lens that is gone and
    // does nothing. Click again only when no run has started (no kmx
    // notification since the Test file one was cleared).
    await palette("Notifications: Clear All Notifications");
    for (let attempt = 1; ; attempt++) {
      await lens("▶ Run example").first().click();
      try {
        await toast('kmx example "weekly": pass').first().waitFor({ timeout: attempt < 3 ? 15_000 : 60_000 });
        break;
      } catch (err) {
        if (attempt >= 3 || (await h.page().locator(".notifications-toasts .notification-toast", { hasText: "kmx" }).count()) > 0) {
          throw err;
        }
      }
    }
    assert.match(await toast('kmx example "weekly": pass').first().innerText(), /answer: Release notes: Draft notes for this week/);
  });

  step("editor route: a declared tool binds to the tool VS Code offers and is called through invokeTool", 180_000, async () => {
    fs.writeFileSync(path.join(workspace, "echo.agent.md"), echo);
    await palette("Notifications: Clear All Notifications");
    await openFile("echo.agent.md");
    await lens("▶ Test file").first().click();
    await toast("kmx echo.agent.md: pass: 1 pass, 0 fail (local preview)").first().waitFor({ timeout: 90_000 });
    const lines = fs.readFileSync(providerLog, "utf8").split("\n");
    // The model was offered the tool by its VS Code name, and the one call
    // reached the tool's own invoke with the model's arguments.
    assert.ok(lines.includes("offered kmx_test_echo"), `the model was not offered the tool: ${JSON.stringify(lines)}`);
    assert.equal(lines.filter((l) => l === 'tool kmx_test_echo {"text":"Draft notes for this week"}').length, 1, "one call through invokeTool");
    assert.equal(sends("kmx-tools"), 2, "two agent sends: the tool round and the answer");
    await openFile("notes.agent.md");
  });

  step("editor route: a real agent's `search` binds to VS Code's tool through invokeTool and `edit/editFiles` is a stub; the replay shows both", 180_000, async () => {
    fs.writeFileSync(path.join(workspace, "fixer.agent.examples.yaml"), fixerExamples);
    fs.writeFileSync(path.join(workspace, "fixer.agent.md"), fixer);
    await palette("Notifications: Clear All Notifications");
    await openFile("fixer.agent.md");
    await lens("▶ Test file").first().click();
    await toast("kmx fixer.agent.md: pass: 1 pass, 0 fail (local preview)").first().waitFor({ timeout: 90_000 });
    const lines = fs.readFileSync(providerLog, "utf8").split("\n");
    // Offered every member of the set `search` and edit/editFiles, under
    // the function names an endpoint accepts.
    const offered = lines.find((l) => l.startsWith("offered ") && l.includes("search_codebase"));
    assert.ok(offered, `the model was not offered search_codebase: ${JSON.stringify(lines)}`);
    for (const fn of ["edit_editFiles", "search_changes", "search_codebase", "search_fileSearch", "search_textSearch", "search_usages"]) {
      assert.ok(offered.split(" ")[1].split(",").includes(fn), `${fn} not offered: ${offered}`);
    }
    // The bound tool ran once, through invokeTool, with the model's
    // arguments; the stub never reached VS Code.
    assert.equal(lines.filter((l) => l === 'tool copilot_searchCodebase {"query":"Fix the typo in DraftNotes"}').length, 1, "one call through invokeTool");
    assert.equal(lines.filter((l) => l.startsWith("tool ") && !l.startsWith("tool copilot_searchCodebase") && !l.startsWith("tool kmx_test_echo")).length, 0, "no other tool was invoked");
    assert.equal(sends("kmx-agent"), 2, "two agent sends: the tool batch and the answer");

    await palette("kmx: Show Run Replay");
    // Other webviews may be open: find the one showing this run's trace.
    let body = "";
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && body === ""; ) {
      for (const f of h.page().frames()) {
        const t = await f.locator("body").innerText({ timeout: 500 }).catch(() => "");
        if (t.includes("tools offered") && t.includes("Fix the typo in DraftNotes")) {
          body = t;
        }
      }
      if (body === "") {
        await h.page().waitForTimeout(500);
      }
    }
    assert.ok(body !== "", "no replay panel shows the fixer run's tool trace");
    assert.match(body, /search\/codebase as search_codebase call 1 \(call-1\), source \S+/, "the bound call, named as the file names it");
    assert.match(body, /src\/notes\.go:12 func DraftNotes/, "the bound tool's result");
    assert.match(body, /edit\/editFiles as edit_editFiles call 2 \(call-2\), source unavailable stub: not available in this test/, "the stubbed call");
    assert.match(body, /Stubbed: edit\/editFiles answered/, "the panel names the stubbed tool once");
    assert.ok(body.includes("live model calls during replay: 0"), "the replay made no live call");
    await h.shot("editor-route-bound-and-stubbed-tool-replay");
    await openFile("notes.agent.md");
  });

  step("editor route: Select Model lists the models VS Code offers and fake", 60_000, async () => {
    const page = h.page();
    await palette("kmx: Select Model");
    for (const label of ["KMX Good", "KMX Tool Call", "KMX Throws", "KMX Slow", "KMX Tools", "KMX Shifty", "KMX Agent", "fake"]) {
      await page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first().waitFor({ timeout: 15_000 });
    }
    await h.shot("select-model-lists-vscode-models");
    await page.keyboard.press("Escape");
  });

  step("Compare Models… runs a file on a model VS Code offers and on fake, and the grid highlights the example they disagree on", 180_000, async () => {
    const page = h.page();
    fs.writeFileSync(path.join(workspace, "compared.agent.md"), compared);
    await palette("Notifications: Clear All Notifications");
    await openFile("compared.agent.md");
    const before = sends("kmx-good");
    await palette("kmx: Compare Models…");
    const input = page.locator(".quick-input-widget .quick-input-box input").first();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    // Check two models in the multi-select pick, as a person does: filter,
    // click the row's checkbox, clear the filter.
    for (const [n, label] of [[1, "KMX Good"], [2, "fake"]]) {
      await input.fill(label);
      const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first();
      await row.waitFor({ timeout: 10_000 });
      await row.locator("input[type=checkbox], .quick-input-list-checkbox, .monaco-custom-toggle").first().click();
      await page.locator(".quick-input-widget .quick-input-count", { hasText: String(n) }).first().waitFor({ timeout: 5_000 });
      await input.fill("");
    }
    await page.keyboard.press("Enter");
    await toast("kmx compared.agent.md on 2 models: verdict fail; the models disagree on 1 example").first().waitFor({ timeout: 90_000 });
    assert.equal(sends("kmx-good") - before, 2, "two sends to KMX Good, one per example");
    let body = "";
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && body === ""; ) {
      for (const f of page.frames()) {
        const t = await f.locator("body").innerText({ timeout: 500 }).catch(() => "");
        if (t.includes("The models disagree on 1 example")) {
          body = t;
        }
      }
      if (body === "") {
        await page.waitForTimeout(500);
      }
    }
    assert.ok(body !== "", "no comparison panel shows the grid");
    assert.ok(body.includes("kmx-test/kmx-good (editor)") && body.includes("fake (fake)"), `the grid's columns: ${body}`);
    assert.match(body, /agree\s+PASS[^\n]*\s+PASS/, "both models pass agree");
    assert.match(body, /disagree\s*≠\s+PASS[^\n]*\s+FAIL/, "KMX Good passes disagree, fake fails it");
    assert.ok(body.includes("2 examples × 2 models: 3 pass, 1 fail, 0 unknown"), body);
    await h.shot("compare-models-grid");
    await openFile("notes.agent.md");
  });

  step("editor route: a tool-call part on the tool-free path is refused, never a pass", 90_000, async () => {
    const t = await runExampleOn("KMX Tool Call", 'kmx example "weekly": inconclusive (unknown)');
    assert.match(await t.first().innerText(), /carries a tool call/);
    assert.equal(sends("kmx-toolcall"), 1, "one send, no retry");
  });

  step("editor route: a provider that throws is inconclusive, and its text stays out", 90_000, async () => {
    const t = await runExampleOn("KMX Throws", "provider failed to answer");
    const text = await t.first().innerText();
    assert.match(text, /provider failed to answer/);
    assert.doesNotMatch(text, /on purpose/);
    assert.equal(sends("kmx-throws"), 1, "one send, no retry, no fallback");
  });

  step("editor route: an answer from another model identity than the one resolved is refused", 90_000, async () => {
    const t = await runExampleOn("KMX Shifty", 'kmx example "weekly": inconclusive (unknown)');
    assert.match(await t.first().innerText(), /did not come from exactly the resolved model/);
    assert.equal(sends("kmx-shifty"), 1, "one send, no retry, no re-selection");
  });

  step("editor route: Cancel on the progress notification reaches the provider; later examples are not sent", 120_000, async () => {
    const page = h.page();
    await palette("Notifications: Clear All Notifications");
    // One example at a time, so "later examples" exist: with the default
    // pool both examples are in flight at once (and both are cancelled).
    h.setMachineSetting("kmx.concurrency", 1);
    await selectModel("KMX Slow");
    await page.locator(".statusbar-item", { hasText: "KMX Slow (kmx-test)" }).first().waitFor({ timeout: 15_000 });
    await lens("▶ Test file").first().click();
    await waitLog("send kmx-slow", 60_000);
    const progress = toast("kmx: testing notes.agent.md");
    await progress.first().waitFor({ timeout: 15_000 });
    await h.shot("editor-route-slow-request-in-flight");
    await progress.first().getByRole("button", { name: "Cancel" }).click();
    await waitLog("cancelled kmx-slow", 30_000);
    await progress.first().waitFor({ state: "detached", timeout: 30_000 });
    // Give a wrongly sent second example time to arrive before counting.
    await page.waitForTimeout(3_000);
    const lines = fs.readFileSync(providerLog, "utf8").split("\n");
    h.setMachineSetting("kmx.concurrency", undefined);
    assert.equal(sends("kmx-slow"), 1, "the second example was not sent after the cancel");
    assert.equal(lines.filter((l) => l === "cancelled kmx-slow").length, 1, "the provider saw the request in flight cancelled");
  });

  step("editor route: back to each file's model", 60_000, async () => {
    await selectModel("Each file's model");
    await h.page().locator(".statusbar-item", { hasText: "kmx: file's model" }).first().waitFor({ timeout: 15_000 });
  });

  step("Set Endpoint Credential hands the credential to the sidecar and it shows nowhere", 150_000, async () => {
    const page = h.page();
    // A canary, not credential-shaped, built at run time.
    const canary = `kmxcanary${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
    await palette("Notifications: Clear All Notifications");
    await palette("kmx: Set Endpoint Credential");
    const input = page.locator(".quick-input-widget .quick-input-box input").first();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill(canary);
    await page.keyboard.press("Enter");
    await toast("the endpoint credential is stored").first().waitFor({ timeout: 60_000 });
    // An HTTPS endpoint where nothing listens: the run reaches the request
    // (so the sidecar had the credential: without it the run is refused
    // for a missing key variable) and fails to connect. An endpoint is sent
    // only a plain model name (VS Code's "Name (vendor)" form is refused
    // before sending), so this file names one.
    try {
      fs.writeFileSync(path.join(workspace, "plain.agent.md"), notes.replace("model: KMX Good (kmx-test)", "model: plain-model"));
      h.setMachineSetting("kmx.endpoint", "https://127.0.0.1:9/v1");
      await openFile("plain.agent.md");
      await page.waitForTimeout(2_000);
      await lens("▶ Run example").first().click();
      const t = toast('kmx example "weekly": inconclusive (unknown)');
      await t.first().waitFor({ timeout: 60_000 });
      const text = await t.first().innerText();
      assert.match(text, /could not connect|did not complete/);
      assert.ok(!text.includes(canary), "the notification holds the credential");
      await palette("kmx: Show Logs");
      await page.locator(".output-view .view-lines").first().waitFor({ timeout: 15_000 });
      const logText = await page.locator(".output-view").first().innerText();
      assert.ok(!logText.includes(canary), "the kmx output channel holds the credential");
      for (const f of [h.machineSettings, path.join(workspace, ".vscode", "settings.json")]) {
        if (fs.existsSync(f)) {
          assert.ok(!fs.readFileSync(f, "utf8").includes(canary), `${f} holds the credential`);
        }
      }
      const kmxHome = path.join(h.scratch, "..", "kmx-home");
      const grep = (dir) => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) {
            grep(p);
          } else if (e.isFile()) {
            assert.ok(!fs.readFileSync(p).includes(canary), `${p} holds the credential`);
          }
        }
      };
      grep(kmxHome);
    } finally {
      // Clean up whatever happened, the credential first: later steps must
      // not run with it, the endpoint or this file (a plain model name is no
      // model VS Code offers, so its diagnostics would stay).
      h.setMachineSetting("kmx.endpoint", undefined);
      await palette("Notifications: Clear All Notifications");
      await palette("kmx: Set Endpoint Credential");
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill("");
      await page.keyboard.press("Enter");
      await toast("the endpoint credential was deleted").first().waitFor({ timeout: 60_000 });
      await palette("File: Save All");
      await palette("View: Close All Editors");
      fs.rmSync(path.join(workspace, "plain.agent.md"), { force: true });
    }
  });
};
