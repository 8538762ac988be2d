// The extension's side of the editor route: it answers the sidecar's
// kmx/languageModel/models, send, tools and invokeTool through vscode.lm.
// Tokens stay in VS Code; the sidecar gets model metadata and answers only.
// It lists, sends and calls; it never resolves a model or tool name (the
// sidecar does), never adds an approval of its own (VS Code's confirmation
// stays), and never retries or falls back.
import * as vscode from "vscode";
import { type LanguageClient, ResponseError } from "vscode-languageclient/node";
import { errorClass, HandleTable, identityOf, type LmMessage, mapMessages, ReplyCollector, sameTool, TextCollector, toolErrorClass, type EditorClass } from "./lmMapping";
import {
  ClientMethods,
  type EditorInvokeToolParams,
  type EditorInvokeToolResult,
  type EditorModelsResult,
  type EditorSendParams,
  type EditorSendResult,
  type EditorToolsResult,
  LanguageModelErrorCode,
} from "./protocol";

const justification = "kmx runs your agent file's examples on this model (local preview).";

export class LanguageModelHost {
  private readonly handles = new HandleTable<vscode.LanguageModelChat>();

  constructor(private readonly log: vscode.OutputChannel) {}

  /** Registers the two request handlers on a language client. */
  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onRequest(ClientMethods.LanguageModels, () => this.models()),
      client.onRequest(ClientMethods.LanguageModelSend, (p: EditorSendParams, token: vscode.CancellationToken) => this.send(p, token)),
      client.onRequest(ClientMethods.LanguageModelTools, () => this.tools()),
      client.onRequest(ClientMethods.LanguageModelInvokeTool, (p: EditorInvokeToolParams, token: vscode.CancellationToken) => this.invokeTool(p, token)),
    ];
  }

  /** Every tool VS Code offers now (vscode.lm.tools), for the binding. */
  tools(): EditorToolsResult {
    return {
      tools: vscode.lm.tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: (t.inputSchema ?? undefined) as Record<string, unknown> | undefined,
        tags: [...t.tags],
      })),
    };
  }

  /**
   * One call of a bound tool through vscode.lm.invokeTool, so VS Code's own
   * confirmation and permission handling apply. Checked right before the
   * call: VS Code must offer exactly one tool of that name, exactly as it
   * was bound; otherwise nothing is called.
   */
  async invokeTool(p: EditorInvokeToolParams, token: vscode.CancellationToken): Promise<EditorInvokeToolResult | ResponseError<{ class: EditorClass }>> {
    const now = vscode.lm.tools.filter((t) => t.name === p.tool.name);
    const tool = now[0];
    if (now.length !== 1 || tool === undefined || !sameTool(tool, p.tool)) {
      return refuse("tool-unavailable");
    }
    if (token.isCancellationRequested) {
      return refuse("cancelled");
    }
    const collect = new TextCollector(p.maxResultBytes);
    try {
      const res = await vscode.lm.invokeTool(tool.name, { input: p.input ?? {}, toolInvocationToken: undefined }, token);
      for (const part of res.content) {
        if (part instanceof vscode.LanguageModelTextPart && !collect.add(part.value)) {
          return refuse("oversized");
        }
      }
    } catch (err) {
      const cls = toolErrorClass(err, token.isCancellationRequested);
      // The class only: a tool's message can quote its input or output.
      this.log.appendLine(`kmx: a tool call ended: ${cls}`);
      return refuse(cls);
    }
    if (token.isCancellationRequested) {
      return refuse("cancelled");
    }
    return { text: collect.text() };
  }

  async models(): Promise<EditorModelsResult> {
    const all = await vscode.lm.selectChatModels();
    const handles = this.handles.add(all);
    return {
      models: all.map((m, i) => ({
        handle: handles[i] ?? "",
        id: m.id,
        name: m.name,
        vendor: m.vendor,
        family: m.family,
        version: m.version,
        maxInputTokens: m.maxInputTokens,
      })),
    };
  }

  async send(p: EditorSendParams, token: vscode.CancellationToken): Promise<EditorSendResult | ResponseError<{ class: EditorClass }>> {
    const chat = this.handles.get(p.handle);
    if (chat === undefined || chat.vendor !== p.model.vendor || chat.id !== p.model.id) {
      return refuse("model-unavailable");
    }
    // Checked again right before the send: a model that disappeared stops
    // the run; nothing else is chosen in its place.
    if (!(await offered(chat))) {
      return refuse("model-unavailable");
    }
    let messages: vscode.LanguageModelChatMessage[];
    try {
      messages = mapMessages(p.messages).map(toChatMessage);
    } catch {
      return refuse("provider-error");
    }
    const tools: vscode.LanguageModelChatTool[] = (p.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    const collect = new ReplyCollector(p.maxReplyBytes);
    try {
      const res = await chat.sendRequest(messages, tools.length > 0 ? { justification, tools } : { justification }, token);
      for await (const part of res.stream) {
        if (token.isCancellationRequested) {
          return refuse("cancelled");
        }
        if (part instanceof vscode.LanguageModelTextPart) {
          if (!collect.addText(part.value)) {
            return refuse("oversized");
          }
        } else if (part instanceof vscode.LanguageModelToolCallPart) {
          collect.addToolCall(part.callId, part.name, part.input);
        }
      }
    } catch (err) {
      const cls = errorClass(err, token.isCancellationRequested);
      // The class only: a provider's message can quote prompts or tokens.
      this.log.appendLine(`kmx: a language model request ended: ${cls}`);
      return refuse(cls);
    }
    if (token.isCancellationRequested) {
      return refuse("cancelled");
    }
    // The identity is read again after the reply: if the provider now
    // describes the model differently, the sidecar refuses the answer.
    const now = (await vscode.lm.selectChatModels({ vendor: chat.vendor, id: chat.id })).find((m) => m.id === chat.id && m.vendor === chat.vendor);
    if (now === undefined) {
      return refuse("model-unavailable");
    }
    return collect.result(identityOf(now));
  }
}

function toChatMessage(m: LmMessage): vscode.LanguageModelChatMessage {
  if (m.role === "assistant") {
    return vscode.LanguageModelChatMessage.Assistant(
      m.parts.map((p) => (p.kind === "toolCall" ? new vscode.LanguageModelToolCallPart(p.callId, p.name, p.input) : new vscode.LanguageModelTextPart(p.kind === "text" ? p.value : ""))),
    );
  }
  return vscode.LanguageModelChatMessage.User(
    m.parts.map((p) =>
      p.kind === "toolResult" ? new vscode.LanguageModelToolResultPart(p.callId, [new vscode.LanguageModelTextPart(p.text)]) : new vscode.LanguageModelTextPart(p.kind === "text" ? p.value : ""),
    ),
  );
}

async function offered(chat: vscode.LanguageModelChat): Promise<boolean> {
  const now = await vscode.lm.selectChatModels({ vendor: chat.vendor, id: chat.id });
  return now.some((m) => m.id === chat.id && m.vendor === chat.vendor);
}

function refuse(cls: EditorClass): ResponseError<{ class: EditorClass }> {
  return new ResponseError(LanguageModelErrorCode, `kmx: ${cls}`, { class: cls });
}
