import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The hub's temporary upload files: `upload-<128 random bits>`, mode 0600, in one directory. */
const TEMP_PREFIX = 'upload-';

export const newTempPath = (dir: string) => join(dir, `${TEMP_PREFIX}${randomBytes(16).toString('hex')}`);

/** Creates the temporary upload directory (at hub start). */
export function prepareUploadDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Deletes temporary upload files older than `olderThanMs` (left by a process that died in the middle
 * of a request). Returns how many were removed.
 */
export async function sweepTempUploads(dir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const path = join(dir, name);
    try {
      const s = await stat(path);
      if (now - s.mtimeMs >= olderThanMs) {
        await unlink(path);
        removed++;
      }
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}
