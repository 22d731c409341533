import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../errors.js';
import { BLOB_KEY, type BlobInfo, type BlobStore } from './port.js';

export const newBlobKey = () => randomBytes(16).toString('base64url');

export const blobNotFound = (key: string) => new AppError('not_found', 'blob_not_found', 'no such file', { key: key.slice(0, 64) });

async function fsyncPath(path: string, flags = 'r'): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Blobs as files under `root` (DATA_DIR/blobs), fanned out by the first two characters of the key.
 * A blob becomes visible only by an atomic rename of a file already fsynced, and the directory is
 * fsynced after, so a crash leaves either the whole blob or none.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private readonly spool: string;

  constructor(private readonly root: string) {
    this.spool = join(root, '.spool');
  }

  /** Creates the directories; spooled stream bodies older than an hour (a crash mid-put) are removed. */
  async init(now = Date.now()): Promise<this> {
    await mkdir(this.spool, { recursive: true, mode: 0o700 });
    for (const name of await readdir(this.spool)) {
      const path = join(this.spool, name);
      const s = await stat(path).catch(() => undefined);
      if (s && now - s.mtimeMs > 3_600_000) await unlink(path).catch(() => undefined);
    }
    return this;
  }

  private path(key: string): string {
    return join(this.root, key.slice(0, 2), key);
  }

  async putFile(tempPath: string): Promise<{ key: string; size: number }> {
    const key = newBlobKey();
    const dest = this.path(key);
    await fsyncPath(tempPath);
    const { size } = await stat(tempPath);
    await mkdir(dirname(dest), { recursive: true, mode: 0o700 });
    try {
      await rename(tempPath, dest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      // another file system: copy under a temporary name, then rename there
      const part = `${dest}.part`;
      await copyFile(tempPath, part);
      await fsyncPath(part);
      await rename(part, dest);
      await unlink(tempPath);
    }
    await fsyncPath(dirname(dest));
    return { key, size };
  }

  async put(body: Readable): Promise<{ key: string; size: number }> {
    await mkdir(this.spool, { recursive: true, mode: 0o700 });
    const temp = join(this.spool, newBlobKey());
    try {
      await pipeline(body, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      return await this.putFile(temp);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
  }

  async get(key: string): Promise<{ stream: Readable; size: number }> {
    if (!BLOB_KEY.test(key)) throw blobNotFound(key);
    const path = this.path(key);
    // open first, then stat the open file: a concurrent delete cannot split the two
    let fh;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw blobNotFound(key);
      throw err;
    }
    const { size } = await fh.stat();
    return { stream: fh.createReadStream(), size };
  }

  async delete(key: string): Promise<void> {
    if (!BLOB_KEY.test(key)) return;
    await unlink(this.path(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async *list(): AsyncIterable<BlobInfo> {
    let dirs: string[];
    try {
      dirs = await readdir(this.root);
    } catch {
      return;
    }
    for (const d of dirs) {
      if (d.startsWith('.')) continue;
      let names: string[];
      try {
        names = await readdir(join(this.root, d));
      } catch {
        continue;
      }
      for (const key of names) {
        if (!BLOB_KEY.test(key)) continue;
        try {
          const s = await stat(join(this.root, d, key));
          yield { key, size: s.size, modifiedAt: s.mtimeMs };
        } catch {
          // deleted meanwhile
        }
      }
    }
  }
}
