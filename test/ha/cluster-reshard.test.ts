import { afterAll, describe, expect, it } from 'vitest';
import { historyKey } from '../../src/bus/history.js';
import { keySlot, partitionOf, partitionTag } from '../../src/store/partition.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { sleep, waitFor } from '../support/wait.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

// Resharding under load (docs/deploy.md "Redis Cluster"): two hub processes on a cluster of the
// test's own take document saves, check-ins and reward credits while `redis-cli --cluster reshard`
// moves a third of the slots to another master; WebSocket subscribers on the other hub follow the
// documents' topics. Afterwards every acknowledged write is there once, and every subscriber saw
// every saved version of its document once, in the topic's order, without a gap in its offsets
// (what the move window drops from the sharded pub/sub comes back from the topic's history).

const binaries = clusterBinariesOrSkip();
const MOVED = 5000; // slots 0..4999

describe.skipIf(!binaries)('resharding a Redis Cluster under two hubs and live subscribers', () => {
  let cluster: RedisClusterSetup | undefined;
  const hubs: HubProcess[] = [];
  const clients: TopicClient[] = [];
  afterAll(async () => {
    for (const c of clients) c.close();
    for (const h of hubs) await h.stop('SIGKILL');
    await cluster?.stop();
  });

  it('slots move while writes and subscriptions run: 0 lost, 0 doubled, no version missed', async () => {
    cluster = await startRedisCluster();
    const env = { ...AUTH_TEST_ENV, REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: 'rs:', STORE_PARTITION_CHECK: '1', DATA_DIR: tempDir('ha-reshard') };
    for (let i = 0; i < 2; i++) hubs.push(await startHubProcess(env, 60_000));
    const [a, b] = hubs as [HubProcess, HubProcess];
    const admin = bearer(await login(a.url, 'admin', TEST_ADMIN_PASSWORD));
    const editor = bearer(await signIn(a.url, ['editor']));
    const staff = bearer(await signIn(a.url, ['staff']));
    const slotOf = (key: string) => keySlot(`{${partitionTag(partitionOf(key))}}`);
    // documents whose topics lie in the moved slots and outside them
    const candidates = Array.from({ length: 400 }, (_, i) => `move-${i}`);
    const inMoved = candidates.filter((s) => slotOf(historyKey(`md:${s}`)) < MOVED).slice(0, 4);
    const outside = candidates.filter((s) => slotOf(historyKey(`md:${s}`)) >= MOVED).slice(0, 2);
    const slugs = [...inMoved, ...outside];
    expect(inMoved).toHaveLength(4);
    const seen = new Map<string, number[]>(slugs.map((s) => [s, []]));
    const offsets = new Map<string, number[]>(slugs.map((s) => [s, []]));
    for (const s of slugs) expect((await call(a.url, 'POST', '/api/md/save', { slug: s, content: '# 0\n' }, editor)).status).toBe(200);
    // one subscriber per document, on the other hub
    for (const s of slugs) {
      const c = await connectTopics(b.url);
      clients.push(c);
      await c.auth(editor.authorization.slice('Bearer '.length));
      await c.subscribe(`md:${s}`);
      c.ws.on('message', (d) => {
        const f = JSON.parse(String(d));
        if (f.type !== 'message' || f.topic !== `md:${s}`) return;
        offsets.get(s)!.push(f.offset);
        if (f.data?.type === 'saved') seen.get(s)!.push(f.data.version);
      });
    }
    const show = (await call(a.url, 'POST', '/api/shows', { name: '이동', venue: '홀', date: '2026-12-31' }, staff)).body;
    const codes: string[] = [];
    for (let i = 0; i < 24; i++) codes.push((await call(b.url, 'POST', '/api/reservations', { show_id: show.id, seat: `R-${i}`, amount_paid: 1000 }, staff)).body.code);
    const zone = (await call(a.url, 'POST', '/culture', { country: 'KR', lang: 'ko', name: '이동' }, admin)).body.id as string;
    const members: string[] = [];
    for (let i = 0; i < 12; i++) members.push((await call(b.url, 'POST', '/api/reward/members', { name: `이동${i}`, zone }, admin)).body.id);

    /** Sends until acknowledged (a 503 during the move is retried as it says); `done` ends it. */
    const acknowledged = async (send: () => Promise<{ status: number; body: any }>, done: (r: { status: number; body: any }, tries: number) => boolean) => {
      for (let tries = 0; tries < 400; tries++) {
        const r = await send().catch(() => undefined);
        if (r && done(r, tries)) return r;
        if (r) expect(r.status, JSON.stringify(r.body)).toBe(503);
        await sleep(50);
      }
      throw new Error('never acknowledged');
    };
    let stop = false;
    const lastSaved = new Map<string, { version: number; content: string }>();
    const saver = async (s: string, i: number) => {
      for (let n = 1; !stop; n++) {
        const content = `# ${n}\n`;
        const r = await acknowledged(() => call(hubs[(i + n) % 2]!.url, 'POST', '/api/md/save', { slug: s, content }, editor), (x) => x.status === 200);
        lastSaved.set(s, { version: r.body.doc.version, content });
        await sleep(20);
      }
    };
    const checkedIn: string[] = [];
    const checkins = async () => {
      for (const [i, code] of codes.entries()) {
        await acknowledged(() => call(hubs[i % 2]!.url, 'POST', '/api/checkin', { code, source: 'camera', scanner: `rs-${i}` }, staff), (x, tries) => x.status === 201 || (tries > 0 && x.status === 409 && x.body?.error?.code === 'already_redeemed'));
        checkedIn.push(code);
        await sleep(30);
      }
    };
    const credited: string[] = [];
    const credits = async () => {
      for (const [i, id] of members.entries()) {
        await acknowledged(() => call(hubs[i % 2]!.url, 'GET', `/work?id=${id}&kc=1&v=100`, undefined, { ...admin, 'idempotency-key': `rs-work-${id}` }), (x) => x.status === 200);
        credited.push(id);
        await sleep(60);
      }
    };
    const writers = Promise.all([...slugs.map(saver), checkins(), credits()]);
    await waitFor(() => [...seen.values()].every((v) => v.length >= 3), 20_000, 'saves seen before the move');

    // move slots 0..MOVED-1 from their master to another one
    const { moved } = await cluster.reshardFromFirst(MOVED);
    await sleep(1500);
    stop = true;
    await writers;

    // every acknowledged write is there once
    for (const s of slugs) {
      const d = await call(b.url, 'GET', `/api/md/doc/${s}`, undefined, editor);
      expect(d.body.doc.content, s).toBe(lastSaved.get(s)!.content);
      expect(d.body.doc.version, s).toBe(lastSaved.get(s)!.version);
    }
    for (const [i, code] of checkedIn.entries()) {
      const r = await call(hubs[(i + 1) % 2]!.url, 'POST', '/api/checkin', { code, source: 'camera', scanner: 'after' }, staff);
      expect(r.body.error?.code, code).toBe('already_redeemed');
    }
    expect(checkedIn).toHaveLength(codes.length);
    for (const id of credited) expect((await call(a.url, 'GET', `/member?id=${id}`, undefined, admin)).body.kc, id).toBe(1);
    expect(credited).toHaveLength(members.length);
    // every subscriber saw every version of its document once, up to the last, in the topic's
    // order (its offsets: a save's event is published after its commit, so two saves on two hubs
    // are announced in the order their publications reach the topic; clients keep the highest)
    for (const s of slugs) {
      const last = lastSaved.get(s)!.version;
      await waitFor(() => seen.get(s)!.includes(last), 15_000, `version ${last} of ${s} at its subscriber`);
      const versions = seen.get(s)!;
      const first = Math.min(...versions);
      expect([...versions].sort((a, b) => a - b), s).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
      const o = offsets.get(s)!;
      expect(o.every((x, i) => typeof x === 'number' && (i === 0 || x === o[i - 1]! + 1)), `${s} offsets ${o.join(',')}`).toBe(true);
    }
    for (const h of hubs) expect(h.output()).not.toMatch(/CROSSSLOT|PartitionError/);
    console.log(JSON.stringify({ reshard: { slots: moved, saves: [...lastSaved.values()].reduce((n, x) => n + x.version, 0), checkins: checkedIn.length, credits: credited.length } }));
  }, 300_000);
});
