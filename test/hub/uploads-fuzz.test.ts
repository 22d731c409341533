import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Hub } from '../../src/hub/index.js';
import { makeHwp, makePdf, multipart } from '../support/uploads.js';

/**
 * Whatever a client sends as multipart, the hub answers: 201 or a 4xx in the error shape, never a
 * 5xx or a hang, and no temporary file is left behind.
 */
let hub: Hub;
let base: string;
const root = mkdtempSync(join(tmpdir(), 'maru-upfuzz-'));
const tempDir = join(root, 'tmp');

beforeAll(async () => {
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: root, shutdownGraceMs: 500, uploads: { tempDir, maxFileBytes: 64 * 1024 } });
  hub.route({
    method: 'POST',
    path: '/test/fuzz',
    body: { schema: z.object({ note: z.string().max(100).optional() }), multipart: { files: ['a', 'b'], fields: ['note'], maxRequestBytes: 256 * 1024 } },
    handler: (ctx) => ({ files: ctx.files!.map((f) => [f.field, f.size]) }),
  });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
});
afterAll(async () => {
  await hub?.stop();
  rmSync(root, { recursive: true, force: true });
});

const valid = multipart([
  { name: 'note', value: '안녕하세요' },
  { name: 'a', filename: 'a.hwp', data: makeHwp() },
  { name: 'b', filename: 'b.pdf', data: makePdf(2000) },
]);

async function post(body: Buffer, contentType = valid.contentType): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}/test/fuzz`, { method: 'POST', headers: { 'content-type': contentType }, body: new Uint8Array(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe('multipart bodies a client may send', () => {
  it('the valid body is accepted', async () => {
    const r = await post(valid.body);
    expect(r.status).toBe(200);
    expect(r.json.files.map((f: [string, number]) => f[0])).toEqual(['a', 'b']);
  });

  it('cut, overwritten or spliced bodies are answered with a 2xx or a 4xx in the error shape, leaving nothing', async () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat({ max: valid.body.length }) }),
      fc.record({ kind: fc.constant('overwrite' as const), at: fc.nat({ max: valid.body.length - 1 }), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat({ max: valid.body.length }), bytes: fc.uint8Array({ minLength: 1, maxLength: 300 }) }),
      fc.record({ kind: fc.constant('junk' as const), bytes: fc.uint8Array({ maxLength: 2000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(mutation, async (m) => {
        let body: Buffer;
        if (m.kind === 'cut') body = valid.body.subarray(0, m.at);
        else if (m.kind === 'overwrite') {
          body = Buffer.from(valid.body);
          Buffer.from(m.bytes).copy(body, m.at);
        } else if (m.kind === 'insert') body = Buffer.concat([valid.body.subarray(0, m.at), Buffer.from(m.bytes), valid.body.subarray(m.at)]);
        else body = Buffer.from(m.bytes);
        const r = await post(body);
        if (r.status >= 300) {
          expect(r.status).toBeGreaterThanOrEqual(400);
          expect(r.status).toBeLessThan(500);
          expect(typeof r.json.error.code).toBe('string');
        }
        expect(readdirSync(tempDir)).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });
});
