/**
 * Writing spill sidecars and whole files atomically: a temporary file in the same folder, fsync,
 * then rename, so a reader never sees a half-written file.
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Write `data` to `path` atomically (creating its folder); `mode` sets the new file's permissions.
 * @throws NodeJS.ErrnoException on I/O failure (the temporary file is removed)
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode?: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  // Short, so a long target name still leaves room (names are limited to 255 bytes).
  const tmp = join(dirname(path), `.${basename(path).slice(0, 200)}.${process.pid}.${Date.now() % 1e6}.tmp`);
  try {
    const handle = await open(tmp, "wx", mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}
