import { describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, TEST_PARTNER_PASSWORD, bearer } from '../support/auth.js';
import { tempDir } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';
import { connectTopics, type TopicClient } from '../support/ws.js';
import { applicant, form, threeFiles } from './fixtures.js';

// Real hub processes (dist/src/main.js): the race between two partners on two processes sharing
// Redis, and kill -9 right after a 201.
const { redis, prefix: freshPrefix, start: startProcess } = await redisProcesses();

async function apply(base: string, files = threeFiles()) {
  const r = await fetch(`${base}/api/subscriptions`, { method: 'POST', body: form(applicant, files) });
  expect(r.status).toBe(201);
  return (await r.json()) as any;
}

async function partnerToken(base: string): Promise<string> {
  const r = await fetch(`${base}/api/partner/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: TEST_PARTNER_PASSWORD }) });
  expect(r.status).toBe(200);
  return ((await r.json()) as { token: string }).token;
}

const check = async (base: string, token: string, id: string, docType: string) => {
  const r = await fetch(`${base}/api/partner/applications/${id}/documents/${docType}/check`, {
    method: 'PUT',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify({ result: 'approved' }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as any;
};

/** Frames of the partner topic until `stop` says so. */
async function collect(client: TopicClient, stop: (data: any) => boolean): Promise<any[]> {
  const out: any[] = [];
  for (;;) {
    const f = await client.next(15_000);
    if (f.type !== 'message') continue;
    out.push(f.data);
    if (stop(f.data)) return out;
  }
}

describe.skipIf(!redis.available)('rental review on two hub processes sharing Redis', () => {
  it('two partners checking the last two documents at once on two processes: exactly one move to approved and one event', async () => {
    const prefix = freshPrefix('rental-proc');
    const dataDir = tempDir('rental-proc'); // one machine: the file blob store is shared
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: dataDir, ...AUTH_TEST_ENV };
    const [a, b] = await Promise.all([startProcess(env), startProcess(env)]);
    const tokenA = await partnerToken(a!.url);
    const tokenB = await partnerToken(b!.url);
    const watchers = await Promise.all([a!, b!].map((p) => connectTopics(p.url)));
    for (const w of watchers) {
      await w.auth(tokenA);
      await w.subscribe('rental:partner');
    }

    const ids: string[] = [];
    for (let round = 0; round < 6; round++) {
      const app = await apply(round % 2 ? a!.url : b!.url);
      ids.push(app.id);
      await check(a!.url, tokenA, app.id, 'bizCard');
      const [x, y] = await Promise.all([check(a!.url, tokenA, app.id, 'uniqueNumber'), check(b!.url, tokenB, app.id, 'internalResolution')]);
      expect([x.status, y.status].sort()).toEqual(['approved', 'under_review']);
    }
    // a last application marks the end of the stream on both processes
    const sentinel = await apply(a!.url);
    for (const w of watchers) {
      const frames = await collect(w, (d) => d.kind === 'application' && d.application.id === sentinel.id);
      for (const id of ids) {
        expect(frames.filter((d) => d.kind === 'status' && d.id === id && d.to === 'approved')).toHaveLength(1);
      }
      w.close();
    }
    const list = await fetch(`${b!.url}/api/partner/applications?status=approved&pageSize=100`, { headers: bearer(tokenB) });
    const body = (await list.json()) as any;
    expect(body.counters.approved).toBe(ids.length);
    expect(body.items.map((i: { id: string }) => i.id).sort()).toEqual([...ids].sort());
  });

  it('kill -9 right after a 201 loses neither the record nor its files', { timeout: 60_000 }, async () => {
    const prefix = freshPrefix('rental-kill');
    for (const store of ['lmdb', 'redis'] as const) {
      const dataDir = tempDir(`rental-kill-${store}`);
      const env: Record<string, string> = { DATA_DIR: dataDir, ...AUTH_TEST_ENV, ...(store === 'redis' ? { REDIS_URL: redis.url, REDIS_PREFIX: prefix } : {}) };
      const first = await startProcess(env);
      const files = threeFiles();
      const app = await apply(first.url, files);
      await first.stop('SIGKILL');

      const again = await startProcess(env);
      const tracked = await fetch(`${again.url}/api/subscriptions/${app.receiptNo}?key=${app.accessKey}`);
      expect(tracked.status).toBe(200);
      expect(((await tracked.json()) as any).id).toBe(app.id);
      for (const f of files) {
        const r = await fetch(`${again.url}${app.documents[f.field].url}?key=${app.accessKey}`);
        expect(r.status).toBe(200);
        expect(Buffer.from(await r.arrayBuffer()).equals(f.data)).toBe(true);
      }
      await again.stop('SIGKILL');
    }
  });
});
