import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};

export interface StaticFile {
  body: Buffer;
  etag: string;
  contentType: string;
  /** Precompressed copies made at build time (`<file>.br`, `<file>.gz` beside it). */
  br?: Buffer;
  gz?: Buffer;
}

/** The body to send for the client's Accept-Encoding: brotli, then gzip, then identity. */
export function pickEncoding(file: StaticFile, acceptEncoding: string | undefined): { body: Buffer; encoding?: 'br' | 'gzip' } {
  const accepted = new Set<string>();
  for (const part of (acceptEncoding ?? '').toLowerCase().split(',')) {
    const [name, ...params] = part.split(';').map((x) => x.trim());
    const q = params.find((x) => x.startsWith('q='));
    if (name && !(q && Number(q.slice(2)) === 0)) accepted.add(name);
  }
  const accepts = (name: string) => accepted.has(name) || accepted.has('*');
  if (file.br && accepts('br')) return { body: file.br, encoding: 'br' };
  if (file.gz && accepts('gzip')) return { body: file.gz, encoding: 'gzip' };
  return { body: file.body };
}

/**
 * The built web/ directory, read once at start-up (it is small), each file with a strong ETag.
 * Paths are the URL paths ("/assets/reward.js"). A missing directory gives an empty set.
 */
export function loadStatic(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(dir)) return files;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const body = readFileSync(full);
        const urlPath = '/' + relative(dir, full).split(sep).join('/');
        files.set(urlPath, {
          body,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
          contentType: TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream',
        });
      }
    }
  };
  walk(dir);
  // precompressed siblings are not files of their own: they attach to the file they compress
  for (const [path, f] of [...files]) {
    const ext = path.endsWith('.br') ? '.br' : path.endsWith('.gz') ? '.gz' : undefined;
    if (!ext) continue;
    files.delete(path);
    const base = files.get(path.slice(0, -ext.length));
    if (base && ext === '.br') base.br = f.body;
    if (base && ext === '.gz') base.gz = f.body;
  }
  return files;
}

/** If-None-Match holds the file's ETag (or *): the client's copy is current. */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .some((t) => t === etag || t === '*');
}
