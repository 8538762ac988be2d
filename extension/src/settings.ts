// The kmx.* settings the server takes, read from VS Code's configuration.
// Only names and URLs travel: the server refuses a credential-shaped value
// itself, and credentials stay in the environment variable keyEnv names.
import * as vscode from "vscode";
import type { Settings } from "./protocol";

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration("kmx");
  const out: Settings = {};
  const keys = ["model", "endpoint", "keyEnv", "judgeEndpoint", "judgeKeyEnv"] as const;
  for (const k of keys) {
    const v = c.get<string>(k, "").trim();
    if (v !== "") {
      out[k] = v;
    }
  }
  // Sent as set; the server refuses anything outside 1 to 32 and says so.
  const concurrency = c.get<number>("concurrency");
  if (typeof concurrency === "number") {
    out.concurrency = concurrency;
  }
  return out;
}
