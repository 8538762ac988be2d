// The editor route's pure parts, free of the vscode module so unit tests
// can run them: message mapping, reply collection with its cap, error
// classes and the handle table. languageModels.ts wires them to vscode.lm.
// Model resolution is not here: the sidecar resolves (route.ResolveEditorModel)
// against the listing this side sends.
import { EditorClasses, type EditorModelIdentity, type EditorSendResult, type EditorToolCall, type EditorToolInfo, type Message } from "./protocol";

export type EditorClass = (typeof EditorClasses)[keyof typeof EditorClasses];

/** One part of a message as vscode.lm takes it. */
export type LmPart =
  | { kind: "text"; value: string }
  | { kind: "toolCall"; callId: string; name: string; input: Record<string, unknown> }
  | { kind: "toolResult"; callId: string; text: string };

/** One message as vscode.lm takes it: it has no system role and no tool role. */
export interface LmMessage {
  role: "user" | "assistant";
  parts: LmPart[];
}

/**
 * Maps the sidecar's messages onto vscode.lm's roles and parts. vscode.lm
 * has no system role, so the system message (the agent's instructions)
 * becomes the first User message. An assistant message's tool calls become
 * tool-call parts (their JSON arguments an object), and the tool results
 * that follow become tool-result parts of one User message. Order is kept;
 * an unknown role or arguments that are not a JSON object are refused.
 */
export function mapMessages(messages: readonly Message[] | null): LmMessage[] {
  const out: LmMessage[] = [];
  for (const m of messages ?? []) {
    switch (m.role) {
      case "system":
      case "user":
        out.push({ role: "user", parts: [{ kind: "text", value: m.content }] });
        break;
      case "assistant": {
        const parts: LmPart[] = [];
        const calls = m.toolCalls ?? [];
        if (m.content !== "" || calls.length === 0) {
          parts.push({ kind: "text", value: m.content });
        }
        for (const c of calls) {
          parts.push({ kind: "toolCall", callId: c.id, name: c.name, input: argumentsObject(c.arguments) });
        }
        out.push({ role: "assistant", parts });
        break;
      }
      case "tool": {
        const part: LmPart = { kind: "toolResult", callId: m.toolCallId ?? "", text: m.content };
        const last = out[out.length - 1];
        if (last !== undefined && last.role === "user" && last.parts.every((p) => p.kind === "toolResult")) {
          last.parts.push(part);
        } else {
          out.push({ role: "user", parts: [part] });
        }
        break;
      }
      default:
        throw new Error(`kmx: unknown message role ${JSON.stringify(m.role)}`);
    }
  }
  return out;
}

function argumentsObject(text: string): Record<string, unknown> {
  const v: unknown = JSON.parse(text);
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new Error("kmx: tool call arguments are not a JSON object");
  }
  return v as Record<string, unknown>;
}

/** What a tool looks like to the binding check (vscode.lm.tools' entries). */
export interface ToolLike {
  name: string;
  description: string;
  inputSchema?: object | undefined;
}

/**
 * Whether the tool VS Code offers now is exactly the one the sidecar bound
 * at the start of the run: same name, description and input schema (a
 * missing schema and an empty one are the same).
 */
export function sameTool(now: ToolLike, bound: EditorToolInfo): boolean {
  const schema = (s: object | undefined | null) => (s === undefined || s === null || Object.keys(s).length === 0 ? {} : s);
  return now.name === bound.name && now.description === bound.description && deepEqual(schema(now.inputSchema), schema(bound.inputSchema));
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return false;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) {
    return false;
  }
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * The class of a failed tool call: cancelled when kmx cancelled it; a
 * cancellation kmx did not ask for is VS Code's confirmation being
 * declined; anything else the tool threw is a tool failure. The error's
 * message is never passed on.
 */
export function toolErrorClass(err: unknown, cancelled: boolean): EditorClass {
  if (cancelled) {
    return EditorClasses.Cancelled;
  }
  const name = (err as { name?: unknown } | undefined)?.name;
  if (name === "Canceled" || name === "CancellationError") {
    return EditorClasses.ToolDeclined;
  }
  return EditorClasses.ToolFailed;
}

/** Joins a tool result's text parts, stopping at the cap. */
export class TextCollector {
  private readonly texts: string[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Adds a text part; false once the text is over the cap (stop reading). */
  add(value: string): boolean {
    this.bytes += Buffer.byteLength(value, "utf8");
    if (this.bytes > this.maxBytes) {
      return false;
    }
    this.texts.push(value);
    return true;
  }

  text(): string {
    return this.texts.join("");
  }
}

/** Collects a reply's text and tool-call parts, stopping at the cap. */
export class ReplyCollector {
  private readonly texts: string[] = [];
  private bytes = 0;
  private readonly calls: EditorToolCall[] = [];

  constructor(private readonly maxBytes: number) {}

  /** Adds a text part; false once the text is over the cap (stop reading). */
  addText(value: string): boolean {
    this.bytes += Buffer.byteLength(value, "utf8");
    if (this.bytes > this.maxBytes) {
      return false;
    }
    this.texts.push(value);
    return true;
  }

  addToolCall(callId: string, name: string, input: unknown): void {
    const obj = typeof input === "object" && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : { value: input };
    this.calls.push({ callId, name, input: obj });
  }

  result(model: EditorModelIdentity): EditorSendResult {
    return { model, text: this.texts.join(""), toolCalls: this.calls };
  }
}

/**
 * The class of a failed send. vscode.LanguageModelError carries a code
 * (NoPermissions, Blocked, NotFound); anything else a provider throws is a
 * provider error. The error's message is never passed on: it can quote
 * the provider.
 */
export function errorClass(err: unknown, cancelled: boolean): EditorClass {
  if (cancelled) {
    return EditorClasses.Cancelled;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  const name = (err as { name?: unknown } | undefined)?.name;
  if (name === "Canceled" || name === "CancellationError") {
    return EditorClasses.Cancelled;
  }
  switch (code) {
    case "NoPermissions":
      return EditorClasses.NoPermissions;
    case "Blocked":
      return EditorClasses.Blocked;
    case "NotFound":
      return EditorClasses.ModelUnavailable;
  }
  return EditorClasses.ProviderError;
}

/** What a model looks like to the handle table and the identity check. */
export interface ModelLike {
  id: string;
  vendor: string;
  family: string;
  version: string;
}

export function identityOf(m: ModelLike): EditorModelIdentity {
  return { vendor: m.vendor, id: m.id, family: m.family, version: m.version };
}

/**
 * The models of recent listings, by handle. A preflight sends to the
 * object it listed, never to a fresh selection; the oldest listings are
 * forgotten (a run that old has ended).
 */
export class HandleTable<T> {
  private generation = 0;
  private readonly listings = new Map<number, T[]>();

  constructor(private readonly keep = 32) {}

  /** Stores one listing and returns the handle of each of its models. */
  add(models: readonly T[]): string[] {
    this.generation += 1;
    const g = this.generation;
    this.listings.set(g, [...models]);
    for (const old of this.listings.keys()) {
      if (old <= g - this.keep) {
        this.listings.delete(old);
      }
    }
    return models.map((_, i) => `${g}:${i}`);
  }

  get(handle: string): T | undefined {
    const m = /^(\d+):(\d+)$/.exec(handle);
    if (m === null) {
      return undefined;
    }
    return this.listings.get(Number(m[1]))?.[Number(m[2])];
  }
}

/** The Select Model choices: every model VS Code offers, then fake. */
export interface ModelChoice {
  label: string;
  description: string;
  detail: string;
  value: string;
}

export function modelChoices(models: readonly (ModelLike & { name: string })[], current: string): ModelChoice[] {
  const out: ModelChoice[] = [
    { label: "Each file's model", description: current === "" ? "current" : "", detail: "The model: of each agent file (else gpt-5.6-terra).", value: "" },
  ];
  for (const m of models) {
    const value = `${m.name} (${m.vendor})`;
    out.push({ label: m.name, description: `${m.vendor} · ${m.id}${current === value ? " · current" : ""}`, detail: "Served by VS Code (editor route).", value });
  }
  out.push({ label: "fake", description: current === "fake" ? "current" : "", detail: "The offline deterministic model: no network, no credential.", value: "fake" });
  return out;
}
