/**
 * A compiled copy of the CLI for tests that run it as a process (worker threads, a terminal): the
 * sources compiled into a folder of their own under `tmp/` (ignored by git), with the launcher and
 * package.json beside it as in the package — so no test rewrites `dist/` while another one runs from it.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./helpers.js";

/**
 * Compile `src/` into `tmp/test-build-<name>/dist` and return the launcher's path and a cleanup.
 * @throws Error with the compiler's output when the build fails
 */
export function buildCli(name: string): { bin: string; cleanup: () => void } {
  const root = path.join(REPO_ROOT, "tmp", `test-build-${name}-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, "bin"), { recursive: true });
  const build = spawnSync("npx", ["tsc", "-p", ".", "--outDir", path.join(root, "dist")], { cwd: REPO_ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`build failed: ${build.stdout}${build.stderr}`);
  const bin = path.join(root, "bin", "condense.js");
  copyFileSync(path.join(REPO_ROOT, "bin", "condense.js"), bin);
  // The package root's package.json, which `--version` reads two folders above dist/cli/.
  copyFileSync(path.join(REPO_ROOT, "package.json"), path.join(root, "package.json"));
  return { bin, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
