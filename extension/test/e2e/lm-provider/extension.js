// Test-only language model provider for kmx's real-VS-Code test: the "edge
// of the world" double behind vscode.lm. Each model behaves one way:
//   KMX Good       answers "Release notes: <input>", or a judge score of 100
//   KMX Tool Call  answers with a tool-call part (refused on the tool-free path)
//   KMX Throws     throws from the provider
//   KMX Slow       answers only when cancelled (and logs that it saw the cancel)
//   KMX Tools      offered tools, calls kmx_test_echo with the input, then
//                  answers "Release notes: <the tool's result>"
//   KMX Shifty     answers, but first changes its version (so the answer
//                  comes from another model identity than the one resolved)
//   KMX Brief      answers "Notes: <input>" (KMX Good's answer without
//                  "Release", so a comparison of the two differs)
//   KMX Agent      offered VS Code's search_codebase and edit_editFiles
//                  (what kmx offers for the references `search` and
//                  `edit/editFiles`), calls both in one batch, then answers
//                  "Review: " and the tools' results
// It also registers copilot_searchCodebase, standing in for the tool
// Copilot Chat registers for `search/codebase` (a `copilot_` name needs the
// chatParticipantPrivate proposal, enabled for this extension only by
// scripts/e2e-test.sh), so a declared reference binds to the tool VS Code
// would use for it.
// Every request and cancellation is appended to $KMX_E2E_PROVIDER_LOG, so
// the test can count sends and see the provider's token fire.
"use strict";
const fs = require("node:fs");
const vscode = require("vscode");

const logFile = process.env.KMX_E2E_PROVIDER_LOG;
function log(line) {
  if (logFile) {
    fs.appendFileSync(logFile, line + "\n");
  }
}

function model(id, name) {
  return { id, name, family: "kmx-test", version: "1", maxInputTokens: 100000, maxOutputTokens: 4000, capabilities: { toolCalling: true } };
}

const models = [
  model("kmx-good", "KMX Good"),
  model("kmx-toolcall", "KMX Tool Call"),
  model("kmx-throws", "KMX Throws"),
  model("kmx-slow", "KMX Slow"),
  model("kmx-tools", "KMX Tools"),
  model("kmx-shifty", "KMX Shifty"),
  model("kmx-agent", "KMX Agent"),
  model("kmx-brief", "KMX Brief"),
];

function textOf(message) {
  return (message.content || []).map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : "")).join("");
}

function toolResultOf(message) {
  return (message.content || [])
    .filter((p) => p instanceof vscode.LanguageModelToolResultPart)
    .map((p) => p.content.map((c) => (c instanceof vscode.LanguageModelTextPart ? c.value : "")).join(""));
}

// Every tool result in the request, in order (from all messages).
function allToolResults(messages) {
  return messages.flatMap((m) => toolResultOf(m));
}

async function until(check, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (!(await check()) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

function activate(context) {
  const changed = new vscode.EventEmitter();
  context.subscriptions.push(
    changed,
    vscode.lm.registerLanguageModelChatProvider("kmx-test", {
      onDidChangeLanguageModelChatInformation: changed.event,
      provideLanguageModelChatInformation() {
        return models;
      },
      async provideLanguageModelChatResponse(info, messages, options, progress, token) {
        log(`send ${info.id}`);
        const first = textOf(messages[0] || { content: [] });
        const last = textOf(messages[messages.length - 1] || { content: [] });
        switch (info.id) {
          case "kmx-good":
            if (/rubric/i.test(first + last)) {
              progress.report(new vscode.LanguageModelTextPart('{"score": 100, "reasoning": "the answer follows the rubric"}'));
            } else {
              progress.report(new vscode.LanguageModelTextPart("Release notes: " + last));
            }
            return;
          case "kmx-brief":
            progress.report(new vscode.LanguageModelTextPart("Notes: " + last));
            return;
          case "kmx-toolcall":
            progress.report(new vscode.LanguageModelToolCallPart("call-1", "kmx_test_echo", { text: "hi" }));
            return;
          case "kmx-throws":
            throw new Error("the kmx test provider failed on purpose");
          case "kmx-tools": {
            const results = toolResultOf(messages[messages.length - 1] || { content: [] });
            const offered = (options.tools || []).map((t) => t.name);
            if (results.length > 0) {
              progress.report(new vscode.LanguageModelTextPart("Release notes: " + results.join(" ")));
            } else if (offered.includes("kmx_test_echo")) {
              log(`offered ${offered.join(",")}`);
              progress.report(new vscode.LanguageModelToolCallPart("call-1", "kmx_test_echo", { text: last }));
            } else {
              progress.report(new vscode.LanguageModelTextPart("Release notes: " + last));
            }
            return;
          }
          case "kmx-agent": {
            const results = allToolResults(messages);
            const offered = (options.tools || []).map((t) => t.name).sort();
            if (results.length > 0) {
              progress.report(new vscode.LanguageModelTextPart("Review: " + results.join(" | ")));
            } else if (offered.includes("search_codebase") && offered.includes("edit_editFiles")) {
              log(`offered ${offered.join(",")}`);
              progress.report(new vscode.LanguageModelToolCallPart("call-1", "search_codebase", { query: last }));
              progress.report(new vscode.LanguageModelToolCallPart("call-2", "edit_editFiles", { filePath: "/work/README.md", oldString: "teh", newString: "the" }));
            } else {
              progress.report(new vscode.LanguageModelTextPart("Review: no tools were offered"));
            }
            return;
          }
          case "kmx-shifty": {
            // Another identity answers: the version changes, and the answer
            // comes only once VS Code lists the model with it.
            const m = models.find((x) => x.id === "kmx-shifty");
            m.version = String(Number(m.version) + 1);
            changed.fire();
            await until(async () => (await vscode.lm.selectChatModels({ vendor: "kmx-test", id: "kmx-shifty" })).some((x) => x.version === m.version), 10_000);
            log(`shifted ${info.id} to version ${m.version}`);
            progress.report(new vscode.LanguageModelTextPart("Release notes: " + last));
            return;
          }
          case "kmx-slow":
            await new Promise((resolve) => {
              if (token.isCancellationRequested) {
                resolve();
              }
              token.onCancellationRequested(() => resolve());
            });
            log(`cancelled ${info.id}`);
            throw new vscode.CancellationError();
        }
      },
      provideTokenCount(_info, text) {
        return typeof text === "string" ? Math.ceil(text.length / 4) : 1;
      },
    }),
    vscode.lm.registerTool("kmx_test_echo", {
      invoke(options) {
        log(`tool kmx_test_echo ${JSON.stringify(options.input)}`);
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(String((options.input || {}).text || ""))]);
      },
    }),
    vscode.lm.registerTool("copilot_searchCodebase", {
      invoke(options) {
        log(`tool copilot_searchCodebase ${JSON.stringify(options.input)}`);
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart("src/notes.go:12 func DraftNotes")]);
      },
    }),
  );
}

module.exports = { activate, deactivate() {} };
