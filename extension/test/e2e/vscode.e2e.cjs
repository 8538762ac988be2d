// The kmx extension in a real VS Code (code-server), driven like a person
// would: one browser session, many cases in order, a screenshot after each.
// Started by scripts/e2e-test.sh, which installs everything and owns the
// code-server process; this file only drives the browser. CommonJS so that
// NODE_PATH finds playwright-core in the cache folder outside the repo.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");
const fs = require("node:fs");
const { chromium } = require("playwright-core");

const url = need("KMX_E2E_URL");
const artifacts = need("KMX_E2E_ARTIFACTS");
const browserHome = need("KMX_E2E_BROWSER_HOME");
const machineSettings = need("KMX_E2E_MACHINE_SETTINGS");
const scratch = need("KMX_E2E_SCRATCH");
// Built at run time from pieces: no token-shaped literal lives in the repo.
const credential = "gh" + "p_" + "Zq7".repeat(12);

function need(name) {
  const v = process.env[name];
  if (v === undefined || v === "") {
    throw new Error(`${name} is not set: run scripts/e2e-test.sh, which sets it`);
  }
  return v;
}

let context;
let page;
let shots = 0;

async function shot(name) {
  shots += 1;
  const file = path.join(artifacts, `${String(shots).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file }).catch(() => undefined);
  return file;
}

// Each case is a node:test test; a failure names its screenshot.
function step(name, timeoutMs, fn) {
  test(name, { timeout: timeoutMs }, async () => {
    try {
      await fn();
    } catch (err) {
      const file = await shot(`FAILED-${name.replace(/[^a-z0-9]+/gi, "-")}`);
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n    screenshot: ${file}`);
    }
    await shot(name.replace(/[^a-z0-9]+/gi, "-"));
  });
}

async function palette(label) {
  // Twice at most: a keypress can land while focus moves between parts.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await page.keyboard.press("Escape");
      await page.keyboard.press("F1");
      const input = page.locator(".quick-input-widget .quick-input-box input").first();
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill(`>${label}`, { timeout: 5_000 });
      const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: label }).first();
      await row.waitFor({ state: "visible", timeout: 10_000 });
      await page.keyboard.press("Enter");
      return;
    } catch (err) {
      if (attempt >= 2) {
        throw err;
      }
    }
  }
}

// Runs a Test Explorer item with a run profile that is not the default:
// Execute Using Profile… from the item's context menu, then the profile.
// A click on the menu item was once only a hover: the hovered item has the
// menu's focus, and Enter runs it; three tries at most.
async function runWithProfile(row, profile) {
  const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: profile }).first();
  for (let attempt = 1; ; attempt += 1) {
    await row.click({ button: "right" });
    const item = page.locator(".monaco-menu .action-label", { hasText: "Execute Using Profile..." }).first();
    await item.waitFor({ timeout: 10_000 });
    await item.hover();
    await page.keyboard.press("Enter");
    try {
      await pick.waitFor({ timeout: 5_000 });
      break;
    } catch (err) {
      await page.keyboard.press("Escape");
      if (attempt >= 3) {
        throw err;
      }
    }
  }
  await pick.click();
}

// Focus the agent file's text (not the Test Explorer's filter box, which is
// a small editor too): its tab, then the active editor group by command.
// Clicking into the text would scroll the page when the editor is scrolled.
async function focusAgentEditor() {
  await page.locator(".tabs-container .tab", { hasText: "triage.agent.md" }).first().click();
  await palette("View: Focus Active Editor Group");
  await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 5_000 });
}

// The end of the agent file, by Go to Line (a Ctrl+End right after a focus
// change was once lost).
async function goToEnd() {
  await palette("Go to Line/Column");
  await page.keyboard.type("9999");
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
}

async function countSettles(locator, want, timeoutMs) {
  const until = Date.now() + timeoutMs;
  let n = await locator.count();
  while (n !== want && Date.now() < until) {
    await page.waitForTimeout(250);
    n = await locator.count();
  }
  return n;
}

async function problemsText() {
  return (await page.locator(".markers-panel").innerText().catch(() => "")) ?? "";
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  fs.mkdirSync(browserHome, { recursive: true });
  context = await chromium.launchPersistentContext(path.join(browserHome, "profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1600, height: 1000 },
    env: { ...process.env, HOME: browserHome },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
});

after(async () => {
  await context?.close();
  // The chat steps' endpoint must not keep the test process alive.
  slowServer.closeAllConnections();
  slowServer.close();
});

step("open the agent file and see the lenses", 120_000, async () => {
  const row = page.locator(".explorer-folders-view .monaco-list-row", { hasText: "triage.agent.md" });
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  await page.locator(".codelens-decoration a", { hasText: "▶ Test file" }).first().waitFor({ timeout: 90_000 });
  const runs = page.locator(".codelens-decoration a", { hasText: "▶ Run example" });
  await runs.first().waitFor({ timeout: 10_000 });
  assert.equal(await countSettles(runs, 3, 15_000), 3, "one ▶ Run example lens per example");
});

step("click Run example and see the verdict", 90_000, async () => {
  await page.locator(".codelens-decoration a", { hasText: "▶ Run example" }).first().click();
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: 'kmx example "crash": pass' });
  await toast.waitFor({ timeout: 60_000 });
  assert.match(await toast.innerText(), /answer: bug/);
  assert.match(await toast.innerText(), /local preview/);
});

step("run the file from the Test Explorer: pass, fail and inconclusive", 120_000, async () => {
  await page.keyboard.press("Escape");
  await palette("Test: Run All Tests");
  await palette("Testing: Focus on Test Explorer View");
  const rows = page.locator(".test-explorer .monaco-list-row");
  const fileRow = rows.filter({ hasText: "triage.agent.md" }).first();
  await fileRow.waitFor({ timeout: 30_000 });
  // Expand the file item so the examples show.
  const crash = rows.filter({ hasText: /^crash/ });
  if ((await crash.count()) === 0) {
    await fileRow.locator(".monaco-tl-twistie").click();
  }
  const want = [
    ["crash", ".codicon-testing-passed-icon"],
    ["billing", ".codicon-testing-failed-icon"],
    ["judged", ".codicon-testing-error-icon"],
  ];
  for (const [label, icon] of want) {
    await rows.filter({ hasText: label }).first().locator(icon).waitFor({ timeout: 60_000 });
  }
  // The errored example says why: inconclusive, never passed.
  await rows.filter({ hasText: "judged" }).first().locator(".codicon-testing-passed-icon").waitFor({ state: "detached", timeout: 1_000 });
  await rows.filter({ hasText: "judged" }).first().click();
  await palette("Test: Peek Output");
  await page.getByText(/inconclusive \(unknown, not a pass\)/).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Escape");
});

step("run Explain and see the failing assertion", 60_000, async () => {
  await focusAgentEditor();
  await palette("kmx: Explain Last Test Failure");
  // Rendered in VS Code's Markdown preview (a webview), not as source.
  const frame = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  const heading = frame.locator("h1, h2", { hasText: "Why the last test failed" });
  await heading.first().waitFor({ timeout: 30_000 });
  const text = (await frame.locator("body").innerText()).replace(/\s+/g, " ");
  assert.match(text, /billing: fail/);
  assert.doesNotMatch(text, /###|\*\*deciding\*\*/, "the explanation is rendered, not Markdown source");
  assert.match(text, /deciding assertion 1 contains: fail — the answer does not contain the expected text; expected billing/);
  // Close the preview (beside the agent file) so the replay step finds one
  // webview; the agent file stays open.
  await focusAgentEditor();
  await palette("View: Close Editors in Other Groups");
});

step("open the replay panel and see the answer", 60_000, async () => {
  await focusAgentEditor();
  // The server offers the newest finished run as a lens once one exists.
  await page.locator(".codelens-decoration a", { hasText: "Replay last run" }).first().waitFor({ timeout: 30_000 });
  await palette("kmx: Show Run Replay");
  const frame = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  await frame.locator("#label", { hasText: "local preview journal replay; not a test result" }).waitFor({ timeout: 30_000 });
  // The newest run is the Test Explorer's test of the file: three answers,
  // each "bug", and the verdicts of that run beside them.
  const answers = frame.locator("pre", { hasText: /^bug$/ });
  await answers.first().waitFor({ timeout: 10_000 });
  assert.equal(await answers.count(), 3, "one replayed answer per example");
  await frame.getByText("live model calls during replay: 0").waitFor({ timeout: 5_000 });
  await frame.locator(".verdict.v-fail").first().waitFor({ timeout: 5_000 });
});

step("type a credential and see it in Problems without the value", 60_000, async () => {
  await page.keyboard.press("Escape");
  await focusAgentEditor();
  await palette("Go to Line/Column");
  await page.keyboard.type("7");
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  await page.keyboard.type(` ${credential}`, { delay: 5 });
  await palette("View: Focus Problems");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: "a GitHub token is in the file" });
  await row.first().waitFor({ timeout: 30_000 });
  const text = await problemsText();
  assert.ok(!text.includes(credential), "the Problems panel shows the credential value");
  assert.ok(!text.includes(credential.slice(0, 12)), "the Problems panel shows part of the credential value");
  await shot("credential-in-problems");
  // Remove it again: the word, then the space before it.
  await focusAgentEditor();
  await palette("Go to Line/Column");
  await page.keyboard.type("7");
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  await page.keyboard.press("Control+Backspace");
  await page.keyboard.press("Backspace");
  await row.first().waitFor({ state: "detached", timeout: 30_000 });
});

step("type an unfinished example: no error; finish it: the diagnostic settles", 90_000, async () => {
  await focusAgentEditor();
  await goToEnd();
  // Delete the closing fence, then type a new example at the end.
  for (let i = 0; i < 4; i += 1) {
    await page.keyboard.press("Backspace");
  }
  await page.keyboard.type("\n\n- id: late\n  input: The app crashed again.\n  assert:\n    - contains: bu", { delay: 10 });
  await palette("View: Focus Problems");
  const still = page.locator(".markers-panel .monaco-list-row", { hasText: "still being written" });
  await still.first().waitFor({ timeout: 30_000 });
  // Unfinished is Information, never an Error.
  assert.equal(await page.locator(".markers-panel .monaco-list-row .codicon-error").count(), 0, "an unfinished example shows an error");
  await shot("unfinished-is-information");
  await focusAgentEditor();
  await goToEnd();
  // Key by key: a typed "\n" right after a word was once lost in the editor.
  await page.keyboard.type("g", { delay: 10 });
  // Something (a widget opened by the word just typed) once ate the Enter
  // that followed: close it first.
  await page.waitForTimeout(300);
  await page.keyboard.press("Escape");
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("```", { delay: 10 });
  await page.keyboard.press("Enter");
  const lines = await page.locator(".editor-group-container.active .view-line").allInnerTexts();
  assert.ok(lines.some((l) => l.trim() === "```"), "the closing fence is on a line of its own");
  await still.first().waitFor({ state: "detached", timeout: 30_000 });
  assert.equal(await page.locator(".markers-panel .monaco-list-row .codicon-error").count(), 0, "the finished example shows an error");
  // The new example gets its lens once the text settles.
  const runs = page.locator(".codelens-decoration a", { hasText: "▶ Run example" });
  await page.keyboard.press("Control+Home");
  await countSettles(runs, 4, 30_000);
  assert.equal(await runs.count(), 4, "the finished example has its ▶ Run example lens");
});

// The editor route (models VS Code offers), before the cases that close
// every editor and break the sidecar. setMachineSetting is declared below.
require("./editor-route.e2e.cjs")({ step, palette, shot, page: () => page, setMachineSetting, machineSettings, scratch });

// Opens a workspace file by Quick Open.
async function openFile(name) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget .quick-input-box input").first();
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(name, { timeout: 5_000 });
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press("Enter");
  await page.locator(".tabs-container .tab.active", { hasText: name }).first().waitFor({ timeout: 10_000 });
}

step("a VS Code agent with no examples: VS Code's language, no error, examples added beside it, run from there", 180_000, async () => {
  await openFile("reviewer.agent.md");
  // The file's language mode is VS Code's own for agent files (chatagent),
  // not one the extension defines: the language picker lists it as such.
  const mode = page.locator("#status\\.editor\\.mode");
  await mode.waitFor({ timeout: 10_000 });
  const modeText = (await mode.innerText()).trim();
  await palette("Change Language Mode");
  const current = page.locator(".quick-input-widget .monaco-list-row", { hasText: "(chatagent)" }).first();
  await current.waitFor({ timeout: 10_000 });
  assert.ok((await current.innerText()).includes(modeText), `the status bar says ${modeText}, which is not VS Code's chatagent language`);
  await page.keyboard.press("Escape");
  // Problems: the Information that there is nothing to test, and no error.
  await palette("View: Focus Problems");
  await page.locator(".markers-panel .monaco-list-row", { hasText: "nothing to test" }).first().waitFor({ timeout: 60_000 });
  assert.equal(await page.locator(".markers-panel .monaco-list-row .codicon-error").count(), 0, "a VS Code agent file shows an error");
  assert.equal(await page.locator(".markers-panel .monaco-list-row .codicon-warning").count(), 0, "a VS Code agent file shows a warning");
  // Add examples, in the recommended home: a file beside the agent, which
  // stays byte for byte what VS Code runs. It opens; run its example there.
  await page.locator(".tabs-container .tab", { hasText: "reviewer.agent.md" }).first().click();
  await page.locator(".codelens-decoration a", { hasText: "Add examples" }).first().click({ timeout: 60_000 });
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: "beside this file" }).first().click({ timeout: 15_000 });
  await page.locator(".tabs-container .tab.active", { hasText: "reviewer.agent.examples.yaml" }).first().waitFor({ timeout: 15_000 });
  // The lens of the examples file just opened: other agent files with
  // Run example lenses may be open in other groups.
  const run = page.locator(".editor-group-container.active .codelens-decoration a", { hasText: "▶ Run example" });
  await run.first().waitFor({ timeout: 30_000 });
  await run.first().click();
  // The skeleton's placeholders are not in the fake model's answer yet.
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: 'kmx example "first-example": fail' });
  await toast.first().waitFor({ timeout: 60_000 });
  assert.match(await toast.first().innerText(), /local preview/);
  // The verdict is on the example in the Test Explorer, under the agent
  // file; the agent file counts the examples beside it.
  await palette("Testing: Focus on Test Explorer View");
  const rows = page.locator(".test-explorer .monaco-list-row");
  const reviewer = rows.filter({ hasText: "reviewer.agent.md" }).first();
  if ((await rows.filter({ hasText: "first-example" }).count()) === 0) {
    await reviewer.locator(".monaco-tl-twistie").click();
  }
  await rows.filter({ hasText: "first-example" }).first().locator(".codicon-testing-failed-icon").waitFor({ timeout: 30_000 });
  await page.locator(".tabs-container .tab", { hasText: "reviewer.agent.md" }).first().click();
  await page.locator(".codelens-decoration a", { hasText: "▶ Test file · 1 example in reviewer.agent.examples.yaml" }).first().waitFor({ timeout: 30_000 });
  // Save and close every editor: the crash-loop step below needs no open
  // agent file (the client shuts down faster than several files reopen).
  await palette("Notifications: Clear All Notifications");
  await palette("File: Save All Files");
  await palette("View: Close All Editors");
});

// ---- The chat panel -------------------------------------------------------

// A local OpenAI-compatible endpoint for slowpoke.agent.md: "slow" is held
// until the client goes away (a cancelled turn, a killed kmx); anything else
// is answered "fast", naming the model it was asked for.
const http = require("node:http");
let slowRequests = 0;
let slowClientPort = 0;

// The process that holds a TCP connection to the slow endpoint from local
// port `port`: its socket's inode from /proc/net/tcp, then the process with
// that socket open. Linux only, and only this user's processes: exactly the
// kmx sidecar whose turn is waiting, never a process picked by name.
function pidOfClient(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  let inode = "";
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of fs.readFileSync(table, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[1].endsWith(`:${hex}`)) {
        inode = cols[9];
      }
    }
  }
  assert.ok(inode !== "" && inode !== "0", `no socket from local port ${port}`);
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let fds = [];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) {
          return Number(pid);
        }
      } catch {
        // gone, or not ours
      }
    }
  }
  throw new Error(`no process holds the socket from local port ${port}`);
}
const slowServer = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const b = JSON.parse(body);
    const last = b.messages[b.messages.length - 1].content;
    if (last === "slow") {
      slowRequests += 1;
      slowClientPort = req.socket.remotePort;
      return; // held: never answered
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ id: "c", object: "chat.completion", model: b.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "fast" } }] }));
  });
});

function chatFrame() {
  return page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
}

async function openFileAndChat(name) {
  // Earlier steps typed into triage.agent.md: save, so closing asks nothing.
  await palette("File: Save All");
  await palette("View: Close All Editors");
  await palette("View: Show Explorer");
  const row = page.locator(".explorer-folders-view .monaco-list-row", { hasText: name });
  await row.first().waitFor({ timeout: 30_000 });
  await row.first().click();
  // A restored chat panel keeps its own editor group, which may hold
  // another agent file: click the lens of the file just opened, in the
  // active group only.
  await page.locator(".editor-group-container.active .tab.active", { hasText: name }).first().waitFor({ timeout: 15_000 });
  const lens = page.locator(".editor-group-container.active .codelens-decoration a", { hasText: "💬 Open chat" });
  await lens.first().waitFor({ timeout: 60_000 });
  await lens.first().click();
  await chatFrame().locator("#label", { hasText: "local preview conversation" }).waitFor({ timeout: 30_000 });
  await chatFrame().locator("#status", { hasText: "ready" }).waitFor({ timeout: 30_000 });
}

async function say(text) {
  const f = chatFrame();
  await f.locator("#input").fill(text);
  await f.locator("#send").click();
}

step("open the chat and talk: the second turn carries the first", 120_000, async () => {
  await openFileAndChat("talker.agent.md");
  const f = chatFrame();
  await f.locator("#empty").waitFor({ timeout: 10_000 });
  await say("hello");
  await f.locator('.turn[data-turn="1"] .agent pre', { hasText: "Turn 1: hello" }).waitFor({ timeout: 30_000 });
  await say("again");
  await f.locator('.turn[data-turn="2"] .agent pre', { hasText: "Turn 2: again" }).waitFor({ timeout: 30_000 });
  assert.match(await f.locator("#model").innerText(), /fake \(route fake\)/);
  assert.equal(await f.locator(".msg.agent .label", { hasText: "local preview" }).count(), 2, "each answer is labelled local preview");
});

step("reload the window: the chat panel comes back with its history, without a model call", 180_000, async () => {
  await palette("Developer: Reload Window");
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  // Nothing is clicked: VS Code restores the panel (the extension's
  // serializer), which reads the history from kmx again.
  const tab = page.locator(".tabs-container .tab", { hasText: "kmx chat: talker.agent.md" });
  await tab.first().waitFor({ timeout: 60_000 });
  if ((await page.locator(".tabs-container .tab.active", { hasText: "kmx chat: talker.agent.md" }).count()) === 0) {
    await tab.first().click();
  }
  const f = chatFrame();
  await f.locator('.turn[data-turn="2"] .agent pre', { hasText: "Turn 2: again" }).waitFor({ timeout: 60_000 });
  await f.locator("#meta", { hasText: "history replayed with 0 model calls" }).waitFor({ timeout: 5_000 });
  assert.equal(await f.locator(".turn").count(), 2);
  await f.locator("#status", { hasText: "ready" }).waitFor({ timeout: 30_000 });
  await shot("chat-restored-after-reload");
  // The restored panel talks on: turn 3 carries the history.
  await say("more");
  await f.locator('.turn[data-turn="3"] .agent pre', { hasText: "Turn 3: more" }).waitFor({ timeout: 30_000 });
});

step("cancel a slow turn: busy until torn down, then the conversation goes on", 120_000, async () => {
  await new Promise((resolve) => slowServer.listen(0, "127.0.0.1", resolve));
  // kmx.endpoint is machine-overridable: code-server reads it from the
  // Machine settings, like kmx.sidecarPath.
  setMachineSetting("kmx.endpoint", `http://127.0.0.1:${slowServer.address().port}/v1`);
  await page.waitForTimeout(1_500);
  await openFileAndChat("slowpoke.agent.md");
  const f = chatFrame();
  await say("slow");
  await f.locator("#status", { hasText: "waiting for the model" }).waitFor({ timeout: 10_000 });
  assert.ok(await f.locator("#send").isDisabled(), "Send is disabled while a turn runs");
  const until = Date.now() + 30_000;
  while (slowRequests < 1 && Date.now() < until) {
    await page.waitForTimeout(200);
  }
  assert.equal(slowRequests, 1, "the turn reached the endpoint");
  await shot("chat-busy");
  await f.locator("#cancel").click();
  await f.locator('.turn[data-turn="1"][data-state="cancelled"]').waitFor({ timeout: 30_000 });
  await f.locator("#status", { hasText: "ready" }).waitFor({ timeout: 10_000 });
  await say("quick");
  await f.locator('.turn[data-turn="2"] .agent pre', { hasText: "fast" }).waitFor({ timeout: 30_000 });
  assert.match(await f.locator("#model").innerText(), /slow-model \(route compatible\)/);
});

step("kill kmx mid-turn: it restarts, the panel offers Discard, the conversation goes on", 150_000, async () => {
  const f = chatFrame();
  const before = slowRequests;
  await say("slow");
  await f.locator("#status", { hasText: "waiting for the model" }).waitFor({ timeout: 10_000 });
  const until = Date.now() + 30_000;
  while (slowRequests === before && Date.now() < until) {
    await page.waitForTimeout(200);
  }
  assert.equal(slowRequests, before + 1, "the turn reached the endpoint");
  const pid = pidOfClient(slowClientPort);
  assert.match(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"), /kmx/, "the endpoint's client is not kmx");
  process.kill(pid, "SIGKILL");
  // The client restarts kmx; the panel reads the history again: turn 3
  // has no recorded outcome, so new turns wait for an explicit Discard.
  await f.locator('.turn[data-turn="3"][data-state="unfinished"]').waitFor({ timeout: 60_000 });
  const discard = f.locator("#discard");
  await discard.waitFor({ timeout: 10_000 });
  await f.locator("#status", { hasText: "ready" }).waitFor({ timeout: 10_000 });
  await shot("chat-unfinished-after-kill");
  await discard.click();
  await f.locator('.turn[data-turn="3"][data-state="discarded"]').waitFor({ timeout: 30_000 });
  assert.equal(await f.locator("#discard").count(), 0, "Discard is still offered after the discard");
  await say("after");
  await f.locator('.turn[data-turn="4"] .agent pre', { hasText: "fast" }).waitFor({ timeout: 30_000 });
  assert.equal(slowRequests, before + 1, "the interrupted turn was sent again");
  setMachineSetting("kmx.endpoint", "");
});

step("a tool-declaring file: the lens shows kmx.yaml's state, Run answers Disabled, the replay shows the call", 120_000, async () => {
  // Copied in now, so the Test Explorer steps above see only their files.
  const workspace = need("KMX_E2E_WORKSPACE");
  const from = path.join(__dirname, "..", "..", "..", "testdata", "tools", "disabled");
  const to = path.join(workspace, "tools-disabled");
  fs.mkdirSync(to, { recursive: true });
  for (const name of ["merged-prs.agent.md", "kmx.yaml"]) {
    fs.copyFileSync(path.join(from, name), path.join(to, name));
  }
  await openFile("merged-prs.agent.md");
  // A plain-text lens (no command) is not a link.
  await page.locator(".codelens-decoration", { hasText: "tools: github_list_merged_prs: Disabled" }).first().waitFor({ timeout: 60_000 });
  await shot("tool-lens-disabled");
  await page.locator(".codelens-decoration a", { hasText: "▶ Run example" }).first().click();
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: 'kmx example "disabled": pass' });
  await toast.waitFor({ timeout: 60_000 });
  assert.match(await toast.innerText(), /disabled for this test/);
  await palette("kmx: Show Run Replay");
  // Other webviews may be open: find the one showing this run's tool trace.
  let body = "";
  for (const deadline = Date.now() + 30_000; Date.now() < deadline && !body.includes("tools offered"); ) {
    for (const f of page.frames()) {
      const t = await f.locator("body").innerText({ timeout: 500 }).catch(() => "");
      if (t.includes("tools offered") && t.includes("merged-prs")) {
        body = t;
      }
    }
    if (!body.includes("tools offered")) {
      await page.waitForTimeout(500);
    }
  }
  assert.ok(body.includes("tools offered"), "the replay panel shows the offered tools");
  assert.ok(body.includes("This tool is disabled for this test."), "the replay panel shows the Disabled answer");
  assert.ok(body.includes("live model calls during replay: 0"), "the replay made no live call");
  await shot("tool-call-replay");
});

// Trials, re-grade and compare, on a local endpoint of their own.
require("./trials.e2e.cjs")({ step, palette, shot, page: () => page, setMachineSetting, runWithProfile });

// Multi-turn examples and fixture workspaces in the Test Explorer.
require("./turns.e2e.cjs")({ step, palette, shot, page: () => page, runWithProfile });

// The replay panel's workspace diff, multi-turn replay and usage, and the
// compare view of a comparison (issues 27, 28 and 29).
require("./replay.e2e.cjs")({ step, palette, shot, page: () => page });

// kmx.sidecarPath is machine-scoped, so it is read from the Machine settings.
function setMachineSetting(key, value) {
  const settings = JSON.parse(fs.readFileSync(machineSettings, "utf8"));
  settings[key] = value;
  fs.writeFileSync(machineSettings, JSON.stringify(settings, null, 2));
}

function fixtureRequests() {
  try {
    return Number(fs.readFileSync(need("KMX_E2E_FIXTURE_COUNTS"), "utf8"));
  } catch {
    return 0;
  }
}

step("a pending recording is captured live as an undoable edit, then runs offline from it", 180_000, async () => {
  // The test build of kmx reaches the owned GitHub MCP fixture (never
  // GitHub); the binding names the fixture's credential variable.
  const workspace = need("KMX_E2E_WORKSPACE");
  const to = path.join(workspace, "tools-capture");
  const file = path.join(to, "capture-prs.agent.md");
  fs.mkdirSync(to, { recursive: true });
  fs.copyFileSync(path.join(__dirname, "..", "..", "..", "testdata", "tools", "capture", "merged-prs.agent.md"), file);
  const bindings = path.join(scratch, "tools.json");
  fs.writeFileSync(bindings, JSON.stringify({
    schemaVersion: "kmx.local-tools/v1",
    bindings: [{ name: "github_list_merged_prs", endpointRef: "github-mcp", repository: "octo-org/Hello-World" }],
    endpoints: { "github-mcp": { url: "https://api.githubcopilot.com/mcp/readonly", credentialEnv: "KMX_E2E_GH" } },
  }), { mode: 0o600 });
  await palette("Notifications: Clear All Notifications");
  setMachineSetting("kmx.sidecarPath", need("KMX_E2E_KMXTEST"));
  setMachineSetting("kmx.toolBindings", bindings);
  await page.waitForTimeout(2_000);
  // One editor: earlier steps leave split groups whose lenses would match.
  await palette("File: Save All");
  await palette("View: Close All Editors");
  await palette("View: Close All Editor Groups");
  // A file copied in a moment ago may not be in Quick Open's index yet:
  // open it from the Explorer.
  await palette("View: Show Explorer");
  const folder = page.locator(".explorer-folders-view .monaco-list-row", { hasText: "tools-capture" }).first();
  await folder.waitFor({ timeout: 30_000 });
  await folder.click();
  const fileRow = page.locator(".explorer-folders-view .monaco-list-row", { hasText: "capture-prs.agent.md" }).first();
  await fileRow.waitFor({ timeout: 30_000 });
  await fileRow.click();
  const tab = page.locator(".tabs-container .tab", { hasText: "capture-prs.agent.md" }).first();
  await page.locator(".tabs-container .tab.active", { hasText: "capture-prs.agent.md" }).first().waitFor({ timeout: 10_000 });
  const runLens = page.locator(".codelens-decoration a", { hasText: "▶ Run example" }).first();
  await runLens.waitFor({ timeout: 60_000 });
  const before = fixtureRequests();
  await runLens.click();
  const captured = page.locator(".notifications-toasts .notification-toast", { hasText: "captured the live result into the pending recording" });
  await captured.first().waitFor({ timeout: 60_000 });
  for (const deadline = Date.now() + 5_000; fixtureRequests() <= before && Date.now() < deadline; ) {
    await page.waitForTimeout(200);
  }
  assert.ok(fixtureRequests() > before, "the live read reached the fixture");
  // The capture is an edit of the open document, not a write behind the
  // editor's back: the tab is dirty and the file on disk still pending.
  await page.locator(".tabs-container .tab.dirty", { hasText: "capture-prs.agent.md" }).first().waitFor({ timeout: 10_000 });
  assert.ok(fs.readFileSync(file, "utf8").includes("calls: []"), "the capture is an unsaved edit");
  await shot("capture-applied");

  // What is on disk after each save says what the editor holds (Monaco's
  // rendered lines wrap and are not in document order).
  const compact = () => fs.readFileSync(file, "utf8").replace(/\s+/g, "");
  const capturedCall = '"pullRequests":[{"number":7,"title":"Addthetoolharness"}]';
  const save = async () => {
    await tab.click();
    await palette("View: Focus Active Editor Group");
    await palette("File: Save");
    await page.locator(".tabs-container .tab.dirty", { hasText: "capture-prs.agent.md" }).first().waitFor({ state: "detached", timeout: 10_000 });
  };
  await save();
  assert.ok(compact().includes(capturedCall), `the capture is the fixture's merged pull request: ${compact()}`);
  assert.ok(!compact().includes("Stillopen"), "only merged pull requests reach the recording");

  // Undo takes the capture back; Redo restores it.
  await tab.click();
  await palette("View: Focus Active Editor Group");
  await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 5_000 });
  await page.keyboard.press("Control+z");
  await page.locator(".tabs-container .tab.dirty", { hasText: "capture-prs.agent.md" }).first().waitFor({ timeout: 10_000 });
  await shot("capture-undone");
  await save();
  assert.ok(compact().includes("calls:[]") && !compact().includes("pullRequests"), `Undo restored the pending recording: ${compact()}`);
  await tab.click();
  await palette("View: Focus Active Editor Group");
  await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 5_000 });
  await page.keyboard.press("Control+Shift+z");
  await page.locator(".tabs-container .tab.dirty", { hasText: "capture-prs.agent.md" }).first().waitFor({ timeout: 10_000 });
  await save();
  assert.ok(compact().includes(capturedCall), `Redo brought the capture back: ${compact()}`);

  // From now on the example runs from its recording: no network call.
  await palette("Notifications: Clear All Notifications");
  const counted = fixtureRequests();
  await page.locator(".codelens-decoration a", { hasText: "▶ Run example" }).first().click();
  await page.locator(".notifications-toasts .notification-toast", { hasText: 'kmx example "weekly": pass' }).first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(500);
  assert.equal(fixtureRequests(), counted, "the recorded run made no network call");
  await shot("capture-offline-pass");
  setMachineSetting("kmx.toolBindings", "");
});

step("a kmx.sidecarPath that points nowhere is an error naming the setting", 60_000, async () => {
  const missing = path.join(scratch, "no-such-kmx");
  setMachineSetting("kmx.sidecarPath", missing);
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: `kmx.sidecarPath points to "${missing}", which is not a file` });
  await toast.first().waitFor({ timeout: 30_000 });
});

step("a sidecar that keeps crashing stops restarting and offers Show Logs", 90_000, async () => {
  await palette("Notifications: Clear All Notifications");
  const crashing = path.join(scratch, "crashing-kmx");
  fs.writeFileSync(crashing, "#!/bin/sh\necho 'crashing-kmx: exiting on purpose' >&2\nexit 3\n", { mode: 0o755 });
  setMachineSetting("kmx.sidecarPath", crashing);
  // The language client adds error toasts of its own; read the notification
  // centre, which lists them all, rather than whichever toast is on top.
  await palette("Notifications: Show Notifications");
  const item = page.locator(".notifications-center .monaco-list-row", { hasText: "kmx lsp stopped 4 times within 3 minutes" });
  await item.first().waitFor({ timeout: 60_000 });
  await item.first().getByRole("button", { name: "Show Logs" }).click();
  await page.locator(".output-view .view-lines", { hasText: "crashing-kmx: exiting on purpose" }).first().waitFor({ timeout: 15_000 });
});
