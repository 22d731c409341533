import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobInfo, RentalBlobs } from './files.js';

/**
 * Rental files on the local file system under `<root>`: staged files in `<root>/.staging/`, final
 * ones at `<root>/<key>`. Writes are fsynced; commit is an fsynced rename, so a final file that
 * the record names survives kill -9. Staged names carry their creation time; the sweep deletes
 * staged files older than a grace period (leftovers of requests that died half-way).
 */
export class LocalBlobs implements RentalBlobs {
  readonly root: string;
  private readonly staging: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.staging = join(this.root, '.staging');
  }

  /** A new staged key. */
  stageKey(hint = 'upload'): string {
    return `.staging/${hint.replace(/[^\w.-]/g, '_')}~${Date.now()}~${randomBytes(8).toString('hex')}`;
  }

  /** Writes a staged blob (fsynced); returns its size. */
  async put(stagedKey: string, data: Buffer | Readable): Promise<number> {
    const path = this.path(stagedKey);
    await mkdir(dirname(path), { recursive: true });
    let size = 0;
    const source = Buffer.isBuffer(data) ? Readable.from([data]) : data;
    const counter = async function* (src: AsyncIterable<Buffer>) {
      for await (const chunk of src) {
        size += chunk.length;
        yield chunk;
      }
    };
    await pipeline(source, counter, createWriteStream(path, { flags: 'wx' }));
    const fh = await open(path, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    return size;
  }

  async commit(stagedKey: string, finalKey: string): Promise<void> {
    const to = this.path(finalKey);
    await mkdir(dirname(to), { recursive: true });
    await rename(this.path(stagedKey), to);
    await syncDir(dirname(to));
  }

  async remove(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async open(key: string): Promise<{ stream: Readable; info: BlobInfo } | undefined> {
    const path = this.path(key);
    try {
      const s = await stat(path);
      if (!s.isFile()) return undefined;
      return { stream: createReadStream(path), info: { size: s.size } };
    } catch {
      return undefined;
    }
  }

  /** Staged files older than `olderThanMs`: deleted (the request that made them is long over). */
  async sweep(olderThanMs: number, now = Date.now()): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.staging);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      const born = Number(name.split('~')[1]);
      if (!Number.isFinite(born) || now - born < olderThanMs) continue;
      await rm(join(this.staging, name), { force: true });
      removed++;
    }
    return removed;
  }

  private path(key: string): string {
    const p = resolve(this.root, key);
    if (!p.startsWith(this.root + sep)) throw new Error(`blob key escapes the root: ${key}`);
    return p;
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
