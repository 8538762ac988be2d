// Bundles the extension into dist/extension.js (vscode stays external: the
// editor provides it) and, with --tests, each unit test into out/unit/.
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

if (args.has("--tests")) {
  const dir = "extension/test/unit";
  const entryPoints = readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `${dir}/${f}`);
  await esbuild.build({
    entryPoints,
    outdir: "out/unit",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    sourcemap: "inline",
    // Unit tests cover only code that does not import vscode.
    external: ["vscode"],
    logLevel: "warning",
  });
} else {
  const options = {
    entryPoints: ["extension/src/extension.ts"],
    outfile: "dist/extension.js",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    sourcemap: !production,
    minify: production,
    logLevel: "warning",
  };
  if (args.has("--watch")) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
  } else {
    await esbuild.build(options);
  }
}
