// Finding the kmx binary, as vscode-terraform's serverPath does: the
// kmx.sidecarPath setting, else the binary bundled for this platform, else
// an error that names the setting. Pure (the file system is passed in) so
// it is unit-tested without VS Code.
import * as path from "node:path";

export interface ServerPathInput {
  /** kmx.sidecarPath as the user wrote it; empty or undefined means unset. */
  setting: string | undefined;
  /** The extension's install folder (context.extensionPath). */
  extensionPath: string;
  /** process.platform and process.arch of the extension host. */
  platform: string;
  arch: string;
  /** The user's home folder, for a setting starting with "~". */
  home: string;
  /** The first workspace folder, for a relative setting; undefined without one. */
  workspaceFolder: string | undefined;
  /** Whether a regular file exists at the path. */
  isFile: (p: string) => boolean;
}

export type ServerPath =
  | { ok: true; path: string; source: "setting" | "bundled" }
  | { ok: false; message: string };

/** The folder inside the extension that holds the binary for a target. */
export function bundledPath(extensionPath: string, platform: string, arch: string): string {
  const exe = platform === "win32" ? "kmx.exe" : "kmx";
  return path.join(extensionPath, "bin", `${platform}-${arch}`, exe);
}

export function resolveServerPath(input: ServerPathInput): ServerPath {
  const setting = (input.setting ?? "").trim();
  if (setting !== "") {
    let p = setting;
    if (p === "~" || p.startsWith("~/") || p.startsWith("~\\")) {
      p = path.join(input.home, p.slice(1));
    }
    if (!path.isAbsolute(p)) {
      if (input.workspaceFolder === undefined) {
        return {
          ok: false,
          message: `kmx.sidecarPath is the relative path "${setting}" but no folder is open to resolve it against: set kmx.sidecarPath to an absolute path of the kmx binary.`,
        };
      }
      p = path.join(input.workspaceFolder, p);
    }
    // A setting that points nowhere is an error, never a silent fall back to
    // the bundled binary: the user asked for that file.
    if (!input.isFile(p)) {
      return {
        ok: false,
        message: `kmx.sidecarPath points to "${p}", which is not a file: fix kmx.sidecarPath (the kmx binary, e.g. bin/kmx from \`make build\`) or clear it to use the bundled binary.`,
      };
    }
    return { ok: true, path: p, source: "setting" };
  }
  const bundled = bundledPath(input.extensionPath, input.platform, input.arch);
  if (input.isFile(bundled)) {
    return { ok: true, path: bundled, source: "bundled" };
  }
  return {
    ok: false,
    message: `kmx found no sidecar: this extension has no bundled binary for ${input.platform}-${input.arch} and kmx.sidecarPath is not set. Set kmx.sidecarPath to the kmx binary (build it with \`make build\`, it lands in bin/kmx).`,
  };
}
