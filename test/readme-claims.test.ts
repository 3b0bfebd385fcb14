/**
 * What the README's Quick start promises about cost: only what calls no model is presented as a
 * way to see the cost before paying (`--dry-run --model …` calls the model and pays, as "Paying
 * once" says).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers.js";

const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8").replace(/\s+/g, " ");

describe("README Quick start", () => {
  it("presents only --estimate as free; --dry-run --model is said to call the model", () => {
    const start = readme.indexOf("**Exit Pi before condensing its session**");
    const quick = readme.slice(start, readme.indexOf("Run the tests:", start));
    expect(quick).toContain(
      "`--estimate` shows what a model run would cost before paying for it: it calls no model (`--dry-run --model …` does call the model and pays for the summaries",
    );
    expect(quick).not.toMatch(/`--dry-run --model …` or `--estimate` show/);
    // "Paying once" says the same.
    expect(readme).toContain("`--dry-run --model …` therefore pays for the summaries");
  });
});
