/** Rows of cells as aligned text lines (columns padded to their widest cell, two spaces apart), the head first. */
export function alignRows(head, cells) {
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => String(c[i]).length)));
  const line = (c) =>
    c
      .map((v, i) => String(v).padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(head), ...cells.map(line)];
}
