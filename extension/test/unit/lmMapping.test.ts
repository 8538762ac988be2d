import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorClass, HandleTable, mapMessages, modelChoices, ReplyCollector, sameTool, TextCollector, toolErrorClass } from "../../src/lmMapping";

describe("mapMessages", () => {
  it("sends the instructions as the first User message, in order", () => {
    assert.deepEqual(
      mapMessages([
        { role: "system", content: "You draft release notes." },
        { role: "user", content: "Ada" },
      ]),
      [
        { role: "user", parts: [{ kind: "text", value: "You draft release notes." }] },
        { role: "user", parts: [{ kind: "text", value: "Ada" }] },
      ],
    );
  });
  it("keeps assistant turns and refuses unknown roles", () => {
    assert.deepEqual(mapMessages([{ role: "assistant", content: "x" }]), [{ role: "assistant", parts: [{ kind: "text", value: "x" }] }]);
    assert.throws(() => mapMessages([{ role: "critic", content: "x" }]), /unknown message role "critic"/);
    assert.deepEqual(mapMessages(null), []);
  });
  it("maps a tool exchange to tool-call parts and one User message of tool results", () => {
    assert.deepEqual(
      mapMessages([
        { role: "system", content: "sys" },
        { role: "user", content: "Ada" },
        {
          role: "assistant",
          content: "",
          toolCalls: [
            { id: "c1", name: "echo", arguments: '{"text":"Ada"}' },
            { id: "c2", name: "echo", arguments: "{}" },
          ],
        },
        { role: "tool", content: "Ada", toolCallId: "c1" },
        { role: "tool", content: "", toolCallId: "c2" },
      ]).slice(2),
      [
        {
          role: "assistant",
          parts: [
            { kind: "toolCall", callId: "c1", name: "echo", input: { text: "Ada" } },
            { kind: "toolCall", callId: "c2", name: "echo", input: {} },
          ],
        },
        {
          role: "user",
          parts: [
            { kind: "toolResult", callId: "c1", text: "Ada" },
            { kind: "toolResult", callId: "c2", text: "" },
          ],
        },
      ],
    );
  });
  it("keeps an assistant's text beside its calls and refuses arguments that are not an object", () => {
    assert.deepEqual(mapMessages([{ role: "assistant", content: "Let me look.", toolCalls: [{ id: "c1", name: "echo", arguments: '{"a":1}' }] }]), [
      {
        role: "assistant",
        parts: [
          { kind: "text", value: "Let me look." },
          { kind: "toolCall", callId: "c1", name: "echo", input: { a: 1 } },
        ],
      },
    ]);
    assert.throws(() => mapMessages([{ role: "assistant", content: "", toolCalls: [{ id: "c1", name: "echo", arguments: "[1]" }] }]), /not a JSON object/);
  });
});

describe("sameTool", () => {
  const bound = { name: "echo", description: "Echoes.", inputSchema: { type: "object", properties: { text: { type: "string" } } }, tags: [] };
  it("accepts exactly the bound tool, whatever the key order", () => {
    assert.equal(sameTool({ name: "echo", description: "Echoes.", inputSchema: { properties: { text: { type: "string" } }, type: "object" } }, bound), true);
    assert.equal(sameTool({ name: "t", description: "" }, { name: "t", description: "", tags: null }), true);
    assert.equal(sameTool({ name: "t", description: "", inputSchema: {} }, { name: "t", description: "", tags: null }), true);
  });
  it("refuses a tool whose name, description or schema changed", () => {
    assert.equal(sameTool({ ...bound, name: "Echo" }, bound), false);
    assert.equal(sameTool({ ...bound, description: "Echoes twice." }, bound), false);
    assert.equal(sameTool({ ...bound, inputSchema: { type: "object", properties: { text: { type: "number" } } } }, bound), false);
    assert.equal(sameTool({ ...bound, inputSchema: undefined }, bound), false);
  });
});

describe("toolErrorClass", () => {
  it("tells kmx's cancel, a declined confirmation and a failing tool apart, never using the message", () => {
    assert.equal(toolErrorClass(new Error("secret"), true), "cancelled");
    assert.equal(toolErrorClass({ name: "Canceled", message: "secret" }, false), "tool-declined");
    assert.equal(toolErrorClass(new Error("secret"), false), "tool-failed");
  });
});

describe("TextCollector", () => {
  it("joins text parts and stops at the cap, counting UTF-8 bytes", () => {
    const c = new TextCollector(4);
    assert.equal(c.add("é"), true);
    assert.equal(c.add("ab"), true);
    assert.equal(c.text(), "éab");
    assert.equal(c.add("c"), false);
  });
});

describe("ReplyCollector", () => {
  const id = { vendor: "copilot", id: "gpt-4.1", family: "gpt-4.1", version: "1" };
  it("joins text parts and keeps tool-call parts", () => {
    const c = new ReplyCollector(100);
    assert.equal(c.addText("Release "), true);
    assert.equal(c.addText("notes:"), true);
    c.addToolCall("c1", "search", { q: "x" });
    c.addToolCall("c2", "list", "not an object");
    assert.deepEqual(c.result(id), {
      model: id,
      text: "Release notes:",
      toolCalls: [
        { callId: "c1", name: "search", input: { q: "x" } },
        { callId: "c2", name: "list", input: { value: "not an object" } },
      ],
    });
  });
  it("stops at the cap, counting UTF-8 bytes", () => {
    const c = new ReplyCollector(4);
    assert.equal(c.addText("éé"), true); // 4 bytes
    assert.equal(c.addText("a"), false);
  });
});

describe("errorClass", () => {
  it("maps LanguageModelError codes and never uses the message", () => {
    assert.equal(errorClass({ code: "NoPermissions", message: "secret" }, false), "no-permissions");
    assert.equal(errorClass({ code: "Blocked" }, false), "blocked");
    assert.equal(errorClass({ code: "NotFound" }, false), "model-unavailable");
    assert.equal(errorClass(new Error("boom"), false), "provider-error");
    assert.equal(errorClass(undefined, false), "provider-error");
  });
  it("says cancelled when the token fired, whatever was thrown", () => {
    assert.equal(errorClass({ code: "Blocked" }, true), "cancelled");
    assert.equal(errorClass({ name: "Canceled" }, false), "cancelled");
  });
});

describe("HandleTable", () => {
  it("finds each listing's objects by handle and forgets old listings", () => {
    const t = new HandleTable<string>(2);
    const a = t.add(["a0", "a1"]);
    const b = t.add(["b0"]);
    assert.deepEqual(a, ["1:0", "1:1"]);
    assert.equal(t.get(a[1] ?? ""), "a1");
    assert.equal(t.get(b[0] ?? ""), "b0");
    t.add(["c0"]);
    assert.equal(t.get("1:0"), undefined);
    assert.equal(t.get("2:0"), "b0");
    assert.equal(t.get("nonsense"), undefined);
    assert.equal(t.get("2:9"), undefined);
  });
});

describe("modelChoices", () => {
  it("lists each file's model, every offered model by qualified name, then fake", () => {
    const models = [{ id: "gpt-4.1", name: "GPT-4.1", vendor: "copilot", family: "gpt-4.1", version: "1" }];
    const got = modelChoices(models, "GPT-4.1 (copilot)");
    assert.deepEqual(
      got.map((c) => [c.label, c.value]),
      [
        ["Each file's model", ""],
        ["GPT-4.1", "GPT-4.1 (copilot)"],
        ["fake", "fake"],
      ],
    );
    assert.match(got[1]?.description ?? "", /current/);
  });
});
