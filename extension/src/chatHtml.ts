// The chat panel's HTML, built from the server's kmx/chat result
// (kmx.chat/v1). Every value is escaped; the page loads nothing, its style
// and its one small script are inline under a nonce, coloured by VS Code's
// theme variables. The script only forwards clicks and typed text to the
// extension and swaps in the transcript the extension renders here. Pure,
// so escaping, the CSP and the states are unit-tested.
import type { ChatResult, ChatTurn, Transcript } from "./protocol";
import { escapeHtml } from "./replayHtml";

export const ChatSchema = "kmx.chat/v1";
export const ChatLabel = "local preview";

/** A CSP that allows the nonce'd inline style and script, and nothing else. */
export function chatContentSecurityPolicy(nonce: string, cspSource: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src ${cspSource}; font-src ${cspSource}; frame-src 'none'; form-action 'none'`;
}

/** What the panel shows besides the transcript. */
export interface ChatView {
  result?: ChatResult;
  busy: boolean;
  /** A problem talking to the sidecar (not a kmx refusal). */
  problem?: string;
}

function modelText(chat: Transcript | undefined): string {
  const m = chat?.model;
  return m === undefined ? "no model yet (the first turn decides it)" : `${m.model} (route ${m.route})`;
}

function turnHtml(t: ChatTurn): string {
  let h = `<div class="turn" data-turn="${t.turn}" data-state="${escapeHtml(t.state)}">`;
  h += `<div class="msg you"><span class="who">you · turn ${t.turn}</span><pre>${escapeHtml(t.input ?? "")}</pre></div>`;
  if (t.state === "answered") {
    h += `<div class="msg agent"><span class="who">agent · <span class="label">${ChatLabel}</span></span><pre>${escapeHtml(t.answer ?? "")}</pre></div>`;
  } else {
    h += `<div class="msg note s-${escapeHtml(t.state)}"><span class="who">turn ${t.turn} ${escapeHtml(t.state)} · <span class="label">${ChatLabel}</span></span>${
      t.error !== undefined && t.error !== "" ? ` ${escapeHtml(t.error)}` : ""
    }</div>`;
  }
  return `${h}</div>`;
}

/** The part of the page that changes: header, transcript, refusal, status. */
export function transcriptHtml(view: ChatView): string {
  const res = view.result;
  const chat = res?.chat;
  if (chat !== undefined && chat.schema !== ChatSchema) {
    return `<p class="error">kmx answered a conversation this panel cannot read (schema ${escapeHtml(chat.schema)}, expected ${ChatSchema}): update the extension and the sidecar together.</p>`;
  }
  let h = `<p class="meta" id="meta">conversation <code>${escapeHtml(chat?.conversation ?? "default")}</code> · model <code id="model">${escapeHtml(modelText(chat))}</code> · history replayed with ${
    chat?.replayLiveCalls ?? 0
  } model calls · <span class="label">${ChatLabel}</span></p>`;
  if ((chat?.replayLiveCalls ?? 0) !== 0) {
    h += `<p class="error">Rebuilding the history attempted ${chat?.replayLiveCalls} live model call(s); each was refused. This is a kmx bug: please report it.</p>`;
  }
  const turns = chat?.turns ?? [];
  h += `<div id="turns">${turns.length === 0 ? `<p class="muted" id="empty">No turns yet: say something to the agent.</p>` : turns.map(turnHtml).join("")}</div>`;
  if (res?.refusal !== undefined) {
    const r = res.refusal;
    h += `<div class="refusal" id="refusal" data-code="${escapeHtml(r.code)}"><p>${escapeHtml(r.message)}</p><p class="muted">next: ${escapeHtml(r.next)}</p>`;
    if (r.code === "unfinished") {
      h += `<button id="discard" type="button">Discard the unfinished turn</button>`;
    }
    h += `</div>`;
  } else if (chat?.unfinished !== undefined && chat.unfinished > 0) {
    h += `<div class="refusal" id="refusal" data-code="unfinished"><p>Turn ${chat.unfinished} has no recorded outcome (its process ended mid-turn); kmx never re-sends a turn.</p><button id="discard" type="button">Discard the unfinished turn</button></div>`;
  }
  if (chat?.pending !== undefined && chat.pending > 0 && !view.busy) {
    h += `<p class="muted" id="pending">Turn ${chat.pending} is running in another window or process: its answer is not in the history yet.</p>`;
  }
  if (res?.error !== undefined && res.error !== "") {
    h += `<p class="error" id="turn-error">The turn did not answer: ${escapeHtml(res.error)}</p>`;
  }
  if (view.problem !== undefined) {
    h += `<p class="error" id="problem">${escapeHtml(view.problem)}</p>`;
  }
  h += `<p class="status" id="status">${view.busy ? "waiting for the model… (Cancel stops it)" : "ready"}</p>`;
  return h;
}

/** The whole page, once per panel; later states arrive as messages. */
export function chatPageHtml(title: string, view: ChatView, nonce: string, cspSource: string, uri = ""): string {
  const n = escapeHtml(nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(chatContentSecurityPolicy(nonce, cspSource))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(title)}</title>
<style nonce="${n}">
body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 1em 1em; }
.banner { border-left: 3px solid var(--vscode-textLink-foreground); padding: .3em .8em; background: var(--vscode-textBlockQuote-background); }
.meta, .muted, .who { color: var(--vscode-descriptionForeground); }
.msg { margin: .4em 0; padding: .2em .6em; border-left: 3px solid var(--vscode-panel-border); }
.msg.agent { border-left-color: var(--vscode-textLink-foreground); }
.msg.note { border-left-color: var(--vscode-testing-iconErrored); }
.label { font-style: italic; }
pre { background: var(--vscode-textCodeBlock-background); padding: .4em; margin: .2em 0; white-space: pre-wrap; word-break: break-word; font-family: var(--vscode-editor-font-family); }
code { font-family: var(--vscode-editor-font-family); }
.error { color: var(--vscode-errorForeground); }
.refusal { border: 1px solid var(--vscode-inputValidation-warningBorder); background: var(--vscode-inputValidation-warningBackground); padding: .3em .8em; }
textarea { width: 100%; box-sizing: border-box; color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); font-family: var(--vscode-font-family); }
button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: .3em .9em; margin: .3em .3em 0 0; }
button:disabled { opacity: .5; }
button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
</style>
</head>
<body data-uri="${escapeHtml(uri)}">
<p class="banner" id="label">local preview conversation with ${escapeHtml(title)}: not a test result, never a verdict</p>
<div id="view">${transcriptHtml(view)}</div>
<form id="form">
<textarea id="input" rows="3" placeholder="Message the agent (Ctrl+Enter sends)" aria-label="Message"></textarea>
<button id="send" type="submit"${view.busy ? " disabled" : ""}>Send</button>
<button id="cancel" class="secondary" type="button"${view.busy ? "" : " disabled"}>Cancel</button>
</form>
<script nonce="${n}">
(function () {
  const vscode = acquireVsCodeApi();
  // The only state kept across a window reload: which file this chat is
  // for. The history is read from kmx again.
  vscode.setState({ uri: document.body.dataset.uri });
  const view = document.getElementById("view");
  const input = document.getElementById("input");
  const send = document.getElementById("send");
  const cancel = document.getElementById("cancel");
  function submit(e) {
    if (e) { e.preventDefault(); }
    if (send.disabled || input.value.trim() === "") { return; }
    vscode.postMessage({ type: "send", text: input.value });
  }
  document.getElementById("form").addEventListener("submit", submit);
  input.addEventListener("keydown", function (e) { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { submit(e); } });
  cancel.addEventListener("click", function () { vscode.postMessage({ type: "cancel" }); });
  view.addEventListener("click", function (e) {
    if (e.target && e.target.id === "discard") { vscode.postMessage({ type: "discard" }); }
  });
  window.addEventListener("message", function (e) {
    const m = e.data;
    if (!m || m.type !== "state") { return; }
    view.innerHTML = m.html;
    send.disabled = m.busy;
    cancel.disabled = !m.busy;
    if (m.sent) { input.value = ""; }
    window.scrollTo(0, document.body.scrollHeight);
  });
  vscode.postMessage({ type: "ready" });
})();
</script>
</body>
</html>
`;
}
