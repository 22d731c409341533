import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get } from '../support/http.js';
import { pageQualitySuite } from '../support/pages-quality.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

// every page at a desktop's width (the phone's in pages-quality-phone.test.ts)
pageQualitySuite([1280]);

describe('security headers and precompressed assets', () => {
  let hub: HubProcess;
  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('headers') });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it('pages, API answers and errors carry the security headers, and no header names the server software', async () => {
    for (const path of ['/docs', '/api/md/docs', '/api/md/doc/nope', '/assets/base.css', '/healthz']) {
      const r = await get(hub.url, path);
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).not.toMatch(/script-src[^;]*unsafe-inline/);
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(r.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(r.headers.get('referrer-policy'), path).toBe('strict-origin-when-cross-origin');
      expect(r.headers.get('server'), path).toBeNull();
      expect(r.headers.get('x-powered-by'), path).toBeNull();
    }
  });

  it('serves brotli or gzip built copies by Accept-Encoding, with one ETag per encoding', async () => {
    const plain = await fetch(`${hub.url}/assets/docs.js`, { headers: { 'accept-encoding': 'identity' } });
    const body = Buffer.from(await plain.arrayBuffer());
    expect(plain.headers.get('content-encoding')).toBeNull();
    const { brotliDecompressSync, gunzipSync } = await import('node:zlib');
    const http = await import('node:http');
    const raw = (enc: string) =>
      new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        http.get(`${hub.url}/assets/docs.js`, { headers: { 'accept-encoding': enc } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    const br = await raw('gzip, deflate, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('accept-encoding');
    expect(br.body.length).toBeLessThan(body.length / 2);
    expect(brotliDecompressSync(br.body).equals(body)).toBe(true);
    const gz = await raw('gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(body)).toBe(true);
    expect(gz.headers.etag).not.toBe(br.headers.etag);
    expect((await raw('br;q=0, gzip')).headers['content-encoding']).toBe('gzip');
    // a cached copy is revalidated per encoding
    const again = await fetch(`${hub.url}/assets/docs.js`, { headers: { 'accept-encoding': 'identity', 'if-none-match': plain.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect((await get(hub.url, '/favicon.ico')).headers.get('content-type')).toBe('image/x-icon');
    expect((await get(hub.url, '/favicon.svg')).status).toBe(200);
  });
});
