// The kmx.* settings the server takes, read from VS Code's configuration.
// Only names and URLs travel: the server refuses a credential-shaped value
// itself, and credentials stay in the environment variable keyEnv names.
import * as vscode from "vscode";
import type { Settings } from "./protocol";

/**
 * The variable the extension sets in the sidecar's environment (in memory,
 * at spawn) to the credential kmx: Set Endpoint Credential stored in VS
 * Code's SecretStorage. Settings carry only this name.
 */
export const SecretKeyEnv = "KMX_EDITOR_ENDPOINT_CREDENTIAL";

/** The SecretStorage key of the endpoint credential. */
export const SecretStorageKey = "kmx.endpointCredential";

/**
 * The settings the server gets. With a stored credential and no
 * kmx.keyEnv, keyEnv names the variable the credential is handed in.
 */
export function serverSettings(hasSecret: boolean): Settings {
  const s = readSettings();
  if (hasSecret && s.keyEnv === undefined) {
    s.keyEnv = SecretKeyEnv;
  }
  return s;
}

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
