import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";
import { resolveServerPath, type ServerPathInput } from "../../src/serverPath";

function input(over: Partial<ServerPathInput>, files: string[]): ServerPathInput {
  return {
    setting: undefined,
    extensionPath: "/ext",
    platform: "linux",
    arch: "x64",
    home: "/home/me",
    workspaceFolder: "/ws",
    isFile: (p) => files.includes(p),
    ...over,
  };
}

describe("resolveServerPath", () => {
  const cases: { name: string; over: Partial<ServerPathInput>; files: string[]; want: { path?: string; source?: string; messageHas?: string[] } }[] = [
    { name: "setting wins over the bundled binary", over: { setting: "/opt/kmx" }, files: ["/opt/kmx", "/ext/bin/linux-x64/kmx"], want: { path: "/opt/kmx", source: "setting" } },
    { name: "setting with ~ expands to home", over: { setting: "~/bin/kmx" }, files: ["/home/me/bin/kmx"], want: { path: path.join("/home/me", "bin/kmx"), source: "setting" } },
    { name: "relative setting resolves against the workspace folder", over: { setting: "bin/kmx" }, files: ["/ws/bin/kmx"], want: { path: "/ws/bin/kmx", source: "setting" } },
    { name: "relative setting without a folder is an error naming the setting", over: { setting: "bin/kmx", workspaceFolder: undefined }, files: [], want: { messageHas: ["kmx.sidecarPath", "absolute"] } },
    { name: "missing setting target never falls back to the bundled binary", over: { setting: "/nope/kmx" }, files: ["/ext/bin/linux-x64/kmx"], want: { messageHas: ["kmx.sidecarPath", "/nope/kmx"] } },
    { name: "blank setting means unset", over: { setting: "   " }, files: ["/ext/bin/linux-x64/kmx"], want: { path: "/ext/bin/linux-x64/kmx", source: "bundled" } },
    { name: "bundled binary per platform and arch", over: { platform: "darwin", arch: "arm64" }, files: ["/ext/bin/darwin-arm64/kmx"], want: { path: "/ext/bin/darwin-arm64/kmx", source: "bundled" } },
    { name: "windows binary has .exe", over: { platform: "win32", arch: "x64" }, files: [path.join("/ext", "bin", "win32-x64", "kmx.exe")], want: { path: path.join("/ext", "bin", "win32-x64", "kmx.exe"), source: "bundled" } },
    { name: "nothing found names the setting and the platform", over: { platform: "linux", arch: "arm64" }, files: ["/ext/bin/linux-x64/kmx"], want: { messageHas: ["kmx.sidecarPath", "linux-arm64"] } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = resolveServerPath(input(c.over, c.files));
      if (c.want.messageHas !== undefined) {
        assert.equal(got.ok, false);
        if (!got.ok) {
          for (const part of c.want.messageHas) {
            assert.ok(got.message.includes(part), `message ${JSON.stringify(got.message)} lacks ${part}`);
          }
        }
      } else {
        assert.deepEqual(got, { ok: true, path: c.want.path, source: c.want.source });
      }
    });
  }
});
