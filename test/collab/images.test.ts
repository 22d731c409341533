import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MAX_IMAGE_BYTES } from '../../src/collab/images.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { clamdAvailable, startClamd, type RunningClamd } from '../support/clamd.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { EICAR, makeJpg, makePdf, makePng, multipart } from '../support/uploads.js';
import { waitFor } from '../support/wait.js';

const silent = pino({ level: 'silent' });
const hasClamd = clamdAvailable();

/**
 * Images of documents (docs/collab.md "Images"): through the hub's upload pipeline (size, type by
 * content, clamd, the blob store), served with the document's access rule, inlined in the HTML
 * export, collected once no version names them and the grace time has passed (an injected clock).
 */
describe('document images', () => {
  let maru: Maru;
  let base: string;
  let dataDir: string;
  let clamd: RunningClamd | undefined;
  const clock = new ManualClock(Date.now());
  const tok = { own: '', rd: '', other: '', staff: '' };
  let link = '';
  type Who = keyof typeof tok | 'none' | 'wrong' | 'link';
  const hdr = (w: Who): Record<string, string> =>
    w === 'none' ? {} : w === 'wrong' ? bearer('mt_' + 'x'.repeat(43)) : w === 'link' ? bearer(link) : bearer(tok[w]);
  const get = (w: Who, p: string) => call(base, 'GET', p, undefined, hdr(w));
  const post = (w: Who, p: string, b: unknown) => call(base, 'POST', p, b, hdr(w));
  /** Every stored image blob (files under DATA_DIR/md-images). */
  const blobs = (): string[] => {
    const root = join(dataDir, 'md-images');
    const walk = (d: string): string[] => (existsSync(d) ? readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)])) : []);
    return walk(root).filter((f) => !f.includes(`${join(root, 'tmp')}`));
  };
  async function upload(w: Who, slug: string | undefined, file?: { data: Buffer; name?: string; type?: string }) {
    const parts = [
      ...(slug === undefined ? [] : [{ name: 'slug', value: slug }]),
      ...(file ? [{ name: 'image', filename: file.name ?? 'pic.png', data: file.data, type: file.type ?? 'image/png' }] : []),
    ];
    const { body, contentType } = multipart(parts);
    const res = await fetch(`${base}/api/md/images`, { method: 'POST', headers: { ...hdr(w), 'content-type': contentType }, body: new Uint8Array(body) });
    const text = await res.text();
    let json: any = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: json };
  }

  beforeAll(async () => {
    clamd = hasClamd ? await startClamd() : undefined;
    dataDir = tempDir('collab-images');
    maru = await startMaru(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        MD_SWEEP_MS: '100',
        BLOB_ORPHAN_GRACE_MS: '60000',
        ...(clamd ? { CLAMD_URL: clamd.url } : {}),
        ...AUTH_TEST_ENV,
      }),
      { logger: silent, clock },
    );
    base = maru.url;
    tok.own = await signIn(base, ['editor'], 'i-owner');
    tok.rd = await signIn(base, ['editor'], 'i-reader');
    tok.other = await signIn(base, ['editor'], 'i-other');
    tok.staff = await signIn(base, ['staff'], 'i-staff');
    expect((await post('own', '/api/md/save', { slug: 'pics', content: '# 그림\n', visibility: 'private' })).status).toBe(200);
    expect((await post('own', '/api/md/access', { slug: 'pics', readers: ['i-reader'] })).status).toBe(200);
    const made = await post('own', '/api/md/links', { slug: 'pics', role: 'read' });
    expect(made.status).toBe(201);
    link = made.body.token;
  }, 60_000);
  afterAll(async () => {
    await maru?.stop();
    await clamd?.stop();
  });

  it('an editor of the document stores a PNG or a JPEG; whoever may read the document sees it, the others get the document\'s own refusal', async () => {
    const png = makePng();
    const up = await upload('own', 'pics', { data: png, name: '도표.png' });
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ slug: 'pics', type: 'image/png', size: png.length });
    expect(up.body.url).toBe(`/api/md/images/pics/${up.body.id}`);
    const jpg = await upload('own', 'pics', { data: makeJpg(), name: 'photo.jpg', type: 'image/jpeg' });
    expect(jpg.status).toBe(201);
    expect(jpg.body.type).toBe('image/jpeg');
    expect(blobs()).toHaveLength(2);

    for (const w of ['own', 'rd', 'link'] as const) {
      const res = await fetch(`${base}${up.body.url}`, { headers: hdr(w) });
      expect(res.status, w).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
    }
    // who may not read the document: the same status and code as for the document itself
    for (const w of ['other', 'staff', 'none', 'wrong'] as const) {
      const doc = await get(w, '/api/md/doc/pics');
      const img = await get(w, up.body.url);
      expect(doc.status, w).toBeGreaterThanOrEqual(400);
      expect([img.status, img.body.error.code], w).toEqual([doc.status, doc.body.error.code]);
    }
    // an image of another document is not served under this one
    expect((await post('own', '/api/md/save', { slug: 'other-doc', content: '# x\n' })).status).toBe(200);
    const wrongDoc = await get('own', `/api/md/images/other-doc/${up.body.id}`);
    expect([wrongDoc.status, wrongDoc.body.error.code]).toEqual([404, 'unknown_image']);
    expect((await get('own', '/api/md/images/pics/not-an-id')).status).toBe(400);
  });

  it('bad input: not an image, too large, infected, no or wrong credential, a reader or a link: a 4xx in the shared shape, nothing stored', async () => {
    const before = blobs().length;
    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ['a PDF', upload('own', 'pics', { data: makePdf(), name: 'x.png' }), 415, 'not_an_image'],
      ['text', upload('own', 'pics', { data: Buffer.from('hello, not an image at all'), name: 'x.png' }), 415, 'not_an_image'],
      ['too large', upload('own', 'pics', { data: Buffer.concat([makePng(), Buffer.alloc(MAX_IMAGE_BYTES)]), name: 'big.png' }), 413, 'file_too_large'],
      ['no file', upload('own', 'pics'), 400, 'missing_file'],
      ['no slug', upload('own', undefined, { data: makePng() }), 400, 'invalid_body'],
      ['unknown document', upload('own', 'no-such-doc', { data: makePng() }), 404, 'unknown_document'],
      ['no credential', upload('none', 'pics', { data: makePng() }), 401, 'unauthorized'],
      ['a wrong token', upload('wrong', 'pics', { data: makePng() }), 401, 'invalid_token'],
      ['a named reader', upload('rd', 'pics', { data: makePng() }), 403, 'read_only'],
      ['an editor the document does not name', upload('other', 'pics', { data: makePng() }), 403, 'forbidden'],
      ['no editor role', upload('staff', 'pics', { data: makePng() }), 403, 'forbidden'],
      ['a share link', upload('link', 'pics', { data: makePng() }), 403, 'forbidden'],
    ];
    for (const [what, answer, status, code] of cases) {
      const r = await answer;
      expect([r.status, r.body?.error?.code], what).toEqual([status, code]);
      expect(typeof r.body.error.message, what).toBe('string');
    }
    expect(blobs().length).toBe(before);
  }, 60_000);

  it.skipIf(!hasClamd)('an infected file is refused by the scan (422 infected), nothing stored', async () => {
    const before = blobs().length;
    const r = await upload('own', 'pics', { data: EICAR, name: 'eicar.png' });
    expect([r.status, r.body.error.code]).toEqual([422, 'infected']);
    expect(blobs().length).toBe(before);
  });

  it('the HTML export carries the document\'s images inline; the markdown keeps their address', async () => {
    const png = makePng();
    const up = await upload('own', 'pics', { data: png, name: 'a.png' });
    expect((await post('own', '/api/md/save', { slug: 'pics', content: `# 그림\n\n![도표](${up.body.url})\n` })).status).toBe(200);
    const html = await get('rd', '/api/md/export/pics?format=html');
    expect(html.status).toBe(200);
    expect(html.text).toContain(`<img src="data:image/png;base64,${png.toString('base64')}" alt="도표">`);
    expect(html.text).not.toContain('/api/md/images/');
    const md = await get('rd', '/api/md/export/pics?format=md');
    expect(md.text).toContain(`![도표](${up.body.url})`);
  });

  it('an image no version names is collected after the grace time; one a version names stays', async () => {
    const kept = await upload('own', 'pics', { data: makePng(), name: 'kept.png' });
    const dropped = await upload('own', 'pics', { data: makePng(), name: 'dropped.png' });
    // named by a version, then no longer by the text: a version still names it
    expect((await post('own', '/api/md/save', { slug: 'pics', content: `# 그림\n\n![k](${kept.body.url})\n` })).status).toBe(200);
    expect((await post('own', '/api/md/save', { slug: 'pics', content: '# 그림\n\n글만\n' })).status).toBe(200);
    // within the grace time nothing goes, named or not
    clock.advance(30_000);
    await new Promise((r) => setTimeout(r, 400));
    expect((await get('own', dropped.body.url)).status).toBe(200);
    // past it: the unnamed image is collected (record and blob), the named one stays
    const count = blobs().length;
    clock.advance(31_000);
    await waitFor(async () => (await get('own', dropped.body.url)).status === 404, 20_000);
    expect((await get('own', dropped.body.url)).body.error.code).toBe('unknown_image');
    expect((await get('own', kept.body.url)).status).toBe(200);
    // the earlier ones of the first tests that no version named went too; the exported one stays
    await waitFor(async () => blobs().length < count, 5_000);
    const left = blobs().length;
    expect(left).toBeGreaterThanOrEqual(2);
    // a deleted document names nothing: its images go once past their grace
    expect((await post('own', '/api/md/delete', { slug: 'pics' })).status).toBe(200);
    clock.advance(61_000);
    await waitFor(async () => blobs().length === 0, 20_000);
  }, 60_000);
});
