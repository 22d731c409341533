import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/**
 * The hub's temporary upload files: `upload-<host>-<pid>-<128 random bits>`, mode 0600, in one
 * directory (several processes may share it). `<host>` is 8 hex digits of the host name's hash, so
 * a process can tell its own host's files and whether the process that wrote one is still alive.
 */
const TEMP_PREFIX = 'upload-';
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const OWNED = /^upload-([0-9a-f]{8})-(\d{1,10})-[0-9a-f]{32}$/;

export const newTempPath = (dir: string) => join(dir, `${TEMP_PREFIX}${HOST}-${process.pid}-${randomBytes(16).toString('hex')}`);

/** Whether a process of this host runs under `pid` (a signal-0 probe). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A file left by a process of this host that is gone (killed in the middle of an upload). */
export function orphaned(name: string): boolean {
  const m = OWNED.exec(name);
  return m !== null && m[1] === HOST && !alive(Number(m[2]));
}

/** Creates the temporary upload directory (at hub start). */
export function prepareUploadDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Deletes temporary upload files whose writer on this host is gone, and any older than `olderThanMs` (left by a process that died in the middle
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
      // a dead writer of this host: now; another host's file (or an old name): once it is old
      const s = await stat(path);
      if (orphaned(name) || now - s.mtimeMs >= olderThanMs) {
        await unlink(path);
        removed++;
      }
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}
