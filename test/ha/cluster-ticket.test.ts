import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { partitionOf } from '../../src/store/partition.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { TicketService } from '../../src/ticket/service.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';

// Mobile ticketing on a Redis Cluster of the test's own (3 masters, 3 replicas), partition check on:
// shows spread over the partitions, each booking, check-in (online and offline), undo and cancel one
// update of its show's partition; the lists across shows merged from the partitions.

const binaries = clusterBinariesOrSkip();
let cluster: RedisClusterSetup;
let store: RedisStore;
let bus: Bus;
const T0 = Date.parse('2026-12-24T18:00:00+09:00');

describe.skipIf(!binaries)('ticketing on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startRedisCluster();
    store = await openRedisStore({ target: { cluster: cluster.nodes.map((x) => ({ host: '127.0.0.1', port: x.port })) }, prefix: 'tk:', partitionCheck: true });
    bus = createBus(store, 'cluster-ticket');
  }, 90_000);
  afterAll(async () => {
    await bus?.close();
    await store?.close();
    await cluster?.stop();
  });

  it('books, checks in, undoes, settles offline scans and cancels on shows of several partitions', async () => {
    const clock = new ManualClock(T0);
    const service = new TicketService({ store, clock, bus });
    const shows = [];
    for (let i = 0; i < 6; i++) {
      clock.advance(10);
      shows.push(await service.createShow({ name: `공연 ${i}`, venue: '홀', date: '2026-12-24' }));
    }
    expect(new Set(shows.map((s) => partitionOf(`ticket:show:${s.id}`))).size).toBeGreaterThan(1);
    const tickets = [];
    for (const [i, s] of shows.entries()) {
      clock.advance(1000);
      tickets.push(await service.book({ show_id: s.id, seat: `A-${i}`, amount_paid: 1000, holder: `홀더 ${i}` }));
      clock.advance(1);
      tickets.push(await service.book({ show_id: s.id, seat: `B-${i}`, amount_paid: 1000 }));
    }
    expect(await service.book({ show_id: shows[0]!.id, seat: 'A-0', amount_paid: 1 }).catch((e: { code: string }) => e.code)).toBe('seat_taken');
    // 20 simultaneous check-ins of one ticket: exactly one ok
    const t0 = tickets[0]!;
    const raced = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => service.checkInByCode(t0.code, { scanner: `s${i}`, source: 'camera' })));
    expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const ok = (raced.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ checkin: { id: string } }>).value;
    // by id, on another show's ticket
    clock.advance(1000);
    expect(await service.checkInById(tickets[2]!.reservation_id, { scanner: 'door' })).toMatchObject({ status: 'ok' });
    // undo the first ticket's entry: entry allowed again
    const undone = await service.revertScan({ show_id: t0.show_id, list_id: 'main', reservation_id: t0.reservation_id, scan_id: ok.checkin.id, reason: '잘못 스캔', by: 'staff' });
    expect(undone.ticket.status).toBe('entry_allowed');
    // offline scans: one admitted, one a conflict (already in), an unknown code invalid
    clock.advance(1000);
    const offline = await service.settleOffline(
      [
        { id: 'sc-1', code: tickets[4]!.code, scanned_at: new Date(clock.now() - 500).toISOString(), source: 'camera' },
        { id: 'sc-2', code: tickets[2]!.code, scanned_at: new Date(clock.now() - 400).toISOString(), source: 'camera' },
        { id: 'sc-3', code: 'TK-23456789', scanned_at: new Date(clock.now() - 300).toISOString(), source: 'camera' },
      ],
      { device: 'dev-1', scanner: 'door-offline' },
    );
    expect(offline.map((r) => r.result)).toEqual(['ok', 'conflict', 'invalid']);
    // cancel a ticket of a third show
    clock.advance(1000);
    expect(await service.cancel(tickets[7]!.reservation_id, '일정 변경')).toMatchObject({ status: 'cancelled' });
    expect(await service.book({ show_id: shows[3]!.id, seat: 'B-3', amount_paid: 1 })).toMatchObject({ seat: 'B-3' });

    expect(await service.counts(shows[0]!.id)).toEqual({ show_id: shows[0]!.id, tickets: 2, checked_in: 0, cancelled: 0 });
    expect(await service.counts(shows[1]!.id)).toMatchObject({ tickets: 2, checked_in: 1 });
    expect(await service.counts(shows[3]!.id)).toMatchObject({ tickets: 2, cancelled: 1 });
    const listed = await service.shows({ limit: 10, offset: 0 });
    expect(listed.page.total).toBe(6);
    expect(listed.shows.map((s) => s.id)).toEqual([...shows].reverse().map((s) => s.id));
    expect((await service.bookings(shows[2]!.id, { limit: 10, offset: 0 })).tickets.map((t) => t.seat)).toEqual(['B-2', 'A-2']);
    expect((await service.recentCheckIns(10)).map((e) => e.code)).toEqual([tickets[4]!.code, tickets[2]!.code, t0.code]);
    const audit = await service.auditLog({ limit: 100 });
    expect(audit.filter((e) => e.result === 'ok')).toHaveLength(3);
    expect(audit.filter((e) => e.result === 'already_redeemed')).toHaveLength(19);
    expect(audit.filter((e) => e.result === 'invalid')).toHaveLength(1);
    expect((await service.conflicts({ limit: 10 })).map((c) => c.code)).toEqual([tickets[2]!.code]);
    expect((await service.auditLog({ limit: 100, reservation_id: t0.reservation_id })).map((e) => e.result)).toContain('reverted');
    expect(await service.ticket(tickets[4]!.code)).toMatchObject({ status: 'checked_in' });
  }, 90_000);
});
