/**
 * Telling a mistyped command from a session argument: `condense metric` is read by the default
 * command (`run`) as a session; when no session goes by that name and the word is close to a
 * command's name, the user meant the command.
 */

/**
 * Edit distance of two short words, a swap of two neighbouring letters counting as one edit
 * (optimal string alignment: `rnu` is one edit from `run`, as `metirc` is from `metric`).
 */
function distance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j], before[j - 2] + 1);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length];
}

/**
 * The command `word` probably meant: one it starts (3 letters at least), or one within two edits
 * (one for words under five letters); undefined for anything that does not look like a command
 * name (a path, an id, a glob).
 * @param names the program's command names
 */
export function suggestCommand(word: string, names: string[]): string | undefined {
  if (!/^[a-z][a-z-]{1,30}$/i.test(word)) return undefined;
  const w = word.toLowerCase();
  const prefixed = names.filter((n) => w.length >= 3 && n.startsWith(w));
  if (prefixed.length === 1) return prefixed[0];
  const limit = w.length < 5 ? 1 : 2;
  const near = names.map((n) => ({ n, d: distance(w, n) })).filter((x) => x.d <= limit);
  near.sort((a, b) => a.d - b.d);
  return near.length > 0 && (near.length === 1 || near[0].d < near[1].d) ? near[0].n : undefined;
}
