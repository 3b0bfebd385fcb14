// Shared by the bench scripts that also run on their own (`node bench/scale.js --sizes 10,100`).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * When the script at `metaUrl` is the one node was started with: the build must be there (else
 * exit 2, naming the script), and the result reads a flag's value (`arg("--sizes", "10,20")`).
 * Otherwise (the script was imported, e.g. by bench/run.js) null.
 */
export function standalone(metaUrl) {
  const file = fileURLToPath(metaUrl);
  if (!process.argv[1] || path.resolve(process.argv[1]) !== file) return null;
  if (!existsSync(path.join(ROOT, "dist/cli/main.js"))) {
    console.error(`bench/${path.basename(file)}: dist/ is missing; run \`npm run build\` first`);
    process.exit(2);
  }
  return (name, fallback) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : fallback;
  };
}
