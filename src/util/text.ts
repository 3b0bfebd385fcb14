/**
 * Text as condense writes it for a model or a terminal: without escape sequences or control
 * characters, cut at word boundaries, on one line when it must fit one.
 */

/**
 * Terminal escape sequences: CSI (`ESC [ … final`, colours and cursor moves), OSC (`ESC ] … BEL`
 * or `ESC \`, titles and links), DCS/SOS/PM/APC strings, two-character escapes, and the 8-bit CSI.
 */
const ESCAPE_SEQUENCE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[PX^_][^\u001b]*(?:\u001b\\)?|\u001b[@-Z\\-_]|\u001b/g;
/** C0 and C1 controls and DEL, except tab and newline (carriage returns are handled apart). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** The same, for a test (no `g` flag, so no state between calls). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const HAS_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * The text without terminal escape sequences and control characters: `\r\n` becomes `\n`, a lone
 * `\r` (a progress line redrawn) keeps only what was written last on that line, a backspace
 * removes itself; tabs and newlines stay.
 */
export function stripControl(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  const lines = text
    .replace(ESCAPE_SEQUENCE, "")
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => {
      if (!line.includes("\r")) return line;
      const parts = line.split("\r").filter((p) => p !== "");
      return parts[parts.length - 1] ?? "";
    });
  return lines.join("\n").replace(CONTROL, "");
}

/** Runs of whitespace (newlines included) as one space, trimmed. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * `text` cut to at most `max` characters at a word boundary, with `…` when cut. A single word
 * longer than `max` (a path, a URL) is cut inside only when no boundary lies in the last half.
 */
export function cropAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = Math.max(1, max - 1);
  const head = text.slice(0, room + 1);
  const boundary = head.search(/\s\S*$/);
  const cut = boundary >= room / 2 ? head.slice(0, boundary) : text.slice(0, room);
  return `${cut.trimEnd()}…`;
}

/**
 * A whole number with its digits grouped by commas, as `toLocaleString("en-US")` writes it
 * ("12,345"), without loading the ICU number formatter: its first use costs ~50 ms, which a model
 * run paid before it sent its first request (issue 18). Other numbers go to `toLocaleString`.
 */
export function groupDigits(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return n.toLocaleString("en-US");
  const digits = String(Math.abs(n));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}
