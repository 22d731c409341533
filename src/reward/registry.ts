import { conflict, notFound } from '../errors.js';
import type { Json, UpdatePlan, Write } from '../store/port.js';
import { memberCodec, memberMetaCodec, zoneCodec } from './codecs.js';
import { K } from './keys.js';
import { ZONE_CAPACITY, gradeFor } from './plan.js';
import type { MemberMeta, MemberRecord, ZoneRecord } from './records.js';
import { normaliseZoneName, zoneId } from './zone-id.js';

/**
 * Registering cultural zones and members as pure update plans (as movements.ts does for the
 * balance movements): given the values read, the rule checks and every write.
 */

export const zoneKeys = (id: string): string[] => [K.zone(id)];

/** A new zone, or the registered one unchanged (created: false). */
export function planZone(
  input: { country: string; lang: string; name: string; now: number },
  [cur]: (Json | undefined)[],
): UpdatePlan<{ zone: ZoneRecord; created: boolean }> {
  const { country, lang, name, now } = input;
  const existing = zoneCodec.decode(cur);
  if (existing) return { writes: [], result: { zone: existing, created: false } };
  const id = zoneId(country, lang, name);
  const zone: ZoneRecord = { id, country, lang, name, key: normaliseZoneName(name), members: 0, created_at: now };
  const writes: Write[] = [
    { op: 'set', key: K.zone(id), value: zoneCodec.encode(zone) },
    { op: 'index', key: K.zones, member: id, score: now },
  ];
  return { writes, result: { zone, created: true } };
}

/** A random member id was already taken: the caller draws another. */
export class IdTaken extends Error {}

export const memberKeys = (zone: string, id: string): string[] => [K.zone(zone), K.member(id)];

/**
 * A new member in a zone: the zone's member count and the membership are written with it, so a
 * full zone refuses with 409 zone_full however many creates race.
 */
export function planMember(
  input: { id: string; name: string; zone: string; publicKey: string | null; now: number },
  [z, existing]: (Json | undefined)[],
): UpdatePlan<{ rec: MemberRecord; zoneMembers: number }> {
  const { id, name, zone, publicKey, now } = input;
  const zr = zoneCodec.decode(z);
  if (!zr) throw notFound('zone_not_found', `no cultural zone ${zone}`);
  if (existing !== undefined) throw new IdTaken();
  if (zr.members >= ZONE_CAPACITY) {
    throw conflict('zone_full', `cultural zone ${zone} holds ${ZONE_CAPACITY} members`, { zone, capacity: ZONE_CAPACITY, members: zr.members });
  }
  const g = gradeFor(0);
  const rec: MemberRecord = { id, name, grade: g.grade, grade_name: g.name, kc: 0, ru: 0, cu: 0, excess: 0 };
  const meta: MemberMeta = { zone, public_key: publicKey, created_at: now };
  const writes: Write[] = [
    { op: 'set', key: K.member(id), value: memberCodec.encode(rec) },
    { op: 'set', key: K.memberMeta(id), value: memberMetaCodec.encode(meta) },
    { op: 'set', key: K.zone(zone), value: zoneCodec.encode({ ...zr, members: zr.members + 1 }) },
    { op: 'index', key: K.members, member: id, score: now },
    { op: 'index', key: K.zoneMembers(zone), member: id, score: now },
  ];
  return { writes, result: { rec, zoneMembers: zr.members + 1 } };
}
