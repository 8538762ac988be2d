import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chatContentSecurityPolicy, chatPageHtml, transcriptHtml } from "../../src/chatHtml";
import type { ChatResult } from "../../src/protocol";

const evil = `<script>alert(1)</script><img src="https://example.invalid/x.png" onerror='y'>`;

function result(over: Partial<ChatResult> = {}): ChatResult {
  return {
    protocolVersion: "kmx.lsp/v1",
    uri: "file:///w/talker.agent.md",
    chat: {
      schema: "kmx.chat/v1",
      label: "local preview",
      file: "/w/talker.agent.md",
      conversation: "default",
      model: { route: "fake", model: "fake" },
      replayLiveCalls: 0,
      turns: [
        { turn: 1, name: "turn:1", sessionId: "s1", state: "answered", model: { route: "fake", model: "fake" }, input: evil, answer: `Turn 1: ${evil}` },
        { turn: 2, name: "turn:2", sessionId: "s2", state: "cancelled", model: { route: "fake", model: "fake" }, input: "wait", error: "turn cancelled" },
      ],
    },
    ...over,
  };
}

describe("chat panel HTML", () => {
  it("escapes every value and labels each message local preview", () => {
    const html = transcriptHtml({ busy: false, result: result() });
    assert.ok(!html.includes("<script>") && !html.includes("<img"), "raw markup from the conversation reached the page");
    assert.ok(html.includes("Turn 1: &#60;script&#62;"));
    assert.equal(html.match(/local preview/g)?.length, 3, "the header and both turns say local preview");
    assert.match(html, /model <code id="model">fake \(route fake\)<\/code>/);
    assert.match(html, /history replayed with 0 model calls/);
    assert.match(html, /turn 2 cancelled/);
  });

  it("offers Discard for an unfinished turn, and only then", () => {
    const refused = transcriptHtml({
      busy: false,
      result: result({ refusal: { code: "unfinished", message: "turn 3 has no recorded outcome", next: "discard it", turn: 3 } }),
    });
    assert.match(refused, /id="discard"/);
    assert.match(refused, /next: discard it/);
    const busy = transcriptHtml({ busy: false, result: result({ refusal: { code: "busy", message: "busy", next: "wait" } }) });
    assert.doesNotMatch(busy, /id="discard"/);
    const opened = result();
    if (opened.chat !== undefined) {
      opened.chat.unfinished = 3;
    }
    assert.match(transcriptHtml({ busy: false, result: opened }), /id="discard"/);
  });

  it("shows a turn running elsewhere as pending, without Discard", () => {
    const running = result();
    if (running.chat !== undefined) {
      running.chat.pending = 3;
    }
    const html = transcriptHtml({ busy: false, result: running });
    assert.match(html, /Turn 3 is running in another window or process/);
    assert.doesNotMatch(html, /id="discard"/);
    // This panel's own turn says so in its status instead.
    assert.doesNotMatch(transcriptHtml({ busy: true, result: running }), /id="pending"/);
  });

  it("says when it is busy and refuses a conversation it cannot read", () => {
    assert.match(transcriptHtml({ busy: true, result: result() }), /waiting for the model/);
    const other = result();
    if (other.chat !== undefined) {
      other.chat.schema = "kmx.chat/v9";
    }
    assert.match(transcriptHtml({ busy: false, result: other }), /cannot read/);
  });

  it("allows only its own nonce'd style and script", () => {
    const csp = chatContentSecurityPolicy("bm9uY2U=", "vscode-resource:");
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-bm9uY2U='/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const page = chatPageHtml("talker.agent.md", { busy: true }, "bm9uY2U=", "vscode-resource:", 'file:///w/a"b.agent.md');
    // The state VS Code keeps for a reload is the file's URI, escaped.
    assert.match(page, /<body data-uri="file:\/\/\/w\/a&#34;b\.agent\.md">/);
    assert.match(page, /vscode\.setState\(\{ uri: document\.body\.dataset\.uri \}\)/);
    assert.equal(page.match(/<script/g)?.length, 1);
    assert.match(page, /<script nonce="bm9uY2U=">/);
    assert.match(page, /<button id="send" type="submit" disabled>/);
    assert.doesNotMatch(page, /<link|src="http/);
  });
});
