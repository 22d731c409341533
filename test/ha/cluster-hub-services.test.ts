import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';

// A hub process on a Redis Cluster of the test's own, partition check on: a show is created, a seat
// booked and checked in over HTTP, the operator console read; none of the redesigned services
// (ticket, console nodes, outbox, presence, mail, coach, the payment ledger: its payout catch-up at
// start) has an update refused (docs/partitions.md).

const binaries = clusterBinariesOrSkip();

describe.skipIf(!binaries)('a hub on a Redis Cluster: the redesigned services', () => {
  let cluster: RedisClusterSetup;
  let hub: HubProcess | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    await hub?.stop('SIGKILL');
    await cluster?.stop();
  });

  it('books and checks in over HTTP and lists the node; no update of theirs is refused', async () => {
    hub = await startHubProcess(
      { DATA_DIR: tempDir('ha-cluster-services'), REDIS_PREFIX: 'hs:', REDIS_CLUSTER_NODES: cluster.seeds, ADMIN_PASSWORD: 'cluster-admin-pw', STORE_PARTITION_CHECK: '1' },
      40_000,
    );
    const url = hub.url;
    const json = { 'content-type': 'application/json' };
    const login = async (user: string, password: string) => {
      const r = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ user, password }) });
      expect(r.status).toBe(200);
      return ((await r.json()) as { token: string }).token;
    };
    const admin = await login('admin', 'cluster-admin-pw');
    const made = await fetch(`${url}/api/auth/accounts`, { method: 'POST', headers: { ...json, authorization: `Bearer ${admin}` }, body: JSON.stringify({ user: 'door', roles: ['staff'], password: 'door-password-1' }) });
    expect(made.status).toBeLessThan(300);
    const staff = { ...json, authorization: `Bearer ${await login('door', 'door-password-1')}` };
    const show = await fetch(`${url}/api/shows`, { method: 'POST', headers: staff, body: JSON.stringify({ name: '재즈 나이트', venue: '블루홀', date: '2026-12-24T20:00:00+09:00' }) });
    expect(show.status).toBe(201);
    const showId = ((await show.json()) as { id: string }).id;
    const codes: string[] = [];
    for (const seat of ['A-1', 'A-2']) {
      const r = await fetch(`${url}/api/reservations`, { method: 'POST', headers: staff, body: JSON.stringify({ show_id: showId, seat, amount_paid: 45000 }) });
      expect(r.status).toBe(201);
      codes.push(((await r.json()) as { code: string }).code);
    }
    const taken = await fetch(`${url}/api/reservations`, { method: 'POST', headers: staff, body: JSON.stringify({ show_id: showId, seat: 'A-1', amount_paid: 1 }) });
    expect(taken.status).toBe(409);
    const ok = await fetch(`${url}/api/checkin`, { method: 'POST', headers: staff, body: JSON.stringify({ code: codes[0] }) });
    expect(ok.status).toBe(201);
    const again = await fetch(`${url}/api/checkin`, { method: 'POST', headers: staff, body: JSON.stringify({ code: codes[0] }) });
    expect(again.status).toBe(409);
    const counts = await fetch(`${url}/api/shows/${showId}/counts`, { headers: staff });
    expect(await counts.json()).toMatchObject({ tickets: 2, checked_in: 1 });
    const ticket = await fetch(`${url}/api/mticket/${codes[1]}`);
    expect(((await ticket.json()) as { status: string }).status).toBe('entry_allowed');
    const state = await fetch(`${url}/api/console/state`, { headers: { authorization: `Bearer ${admin}` } });
    expect(state.status).toBe(200);
    expect(((await state.json()) as { nodes: unknown[] }).nodes).toHaveLength(1);
    const out = hub.output();
    expect(out).not.toMatch(/CROSSSLOT/);
    expect(out.split('\n').filter((l) => /PartitionError/.test(l) && (/"(ticket|console|outbox|presence|mail|coach|pay):/.test(l) || /aggregate "ledger"/.test(l)))).toEqual([]);
  }, 120_000);
});
