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
    { op: 'index', key: K.zonesOf(id), member: id, score: now },
  ];
  return { writes, result: { zone, created: true } };
}

/** A random member id was already taken: the caller draws another. */
export class IdTaken extends Error {}

/** A member counted by its zone and still to be created (K.joining): what the member's update needs. */
export interface Joining {
  id: string;
  name: string;
  zone: string;
  public_key: string | null;
  created_at: number;
}

export const joinKeys = (zone: string, id: string): string[] => [K.zone(zone), K.joining(zone, id)];

/**
 * A new member's place in its zone, the zone's own update (its aggregate): the member count, the
 * membership and the member still to be created (K.joining, listed in `reward:joining:{#p}`), so a
 * full zone refuses with 409 zone_full however many creates race. The member is then created in its
 * own update (planMember) and the joining record removed (planJoined); one left behind (a process
 * stopped between) is carried by the next start, so the count and the members stay equal.
 */
export function planJoin(
  input: Joining,
  [z, joining]: (Json | undefined)[],
): UpdatePlan<{ rec: MemberRecord; zoneMembers: number }> {
  const { id, name, zone } = input;
  const zr = zoneCodec.decode(z);
  if (!zr) throw notFound('zone_not_found', `no cultural zone ${zone}`);
  if (joining !== undefined) throw new IdTaken();
  if (zr.members >= ZONE_CAPACITY) {
    throw conflict('zone_full', `cultural zone ${zone} holds ${ZONE_CAPACITY} members`, { zone, capacity: ZONE_CAPACITY, members: zr.members });
  }
  const writes: Write[] = [
    { op: 'set', key: K.zone(zone), value: zoneCodec.encode({ ...zr, members: zr.members + 1 }) },
    { op: 'index', key: K.zoneMembers(zone), member: id, score: input.created_at },
    { op: 'set', key: K.joining(zone, id), value: { ...input } },
    { op: 'index', key: K.joiningOf(zone), member: `${zone}/${id}`, score: input.created_at },
  ];
  return { writes, result: { rec: newMember(id, name), zoneMembers: zr.members + 1 } };
}

function newMember(id: string, name: string): MemberRecord {
  const g = gradeFor(0);
  return { id, name, grade: g.grade, grade_name: g.name, kc: 0, ru: 0, cu: 0, excess: 0 };
}

export const memberKeys = (id: string): string[] => [K.member(id)];

/** The member's own update: its record, its facts and its entry in the member list of its partition (once). */
export function planMember(j: Joining, [existing]: (Json | undefined)[]): UpdatePlan<boolean> {
  if (existing !== undefined) return { writes: [], result: false };
  const meta: MemberMeta = { zone: j.zone, public_key: j.public_key, created_at: j.created_at };
  const writes: Write[] = [
    { op: 'set', key: K.member(j.id), value: memberCodec.encode(newMember(j.id, j.name)) },
    { op: 'set', key: K.memberMeta(j.id), value: memberMetaCodec.encode(meta) },
    { op: 'index', key: K.membersOf(j.id), member: j.id, score: j.created_at },
  ];
  return { writes, result: true };
}

/** The zone's update once the member exists: the joining record goes. */
export function planJoined(zone: string, id: string): UpdatePlan<undefined> {
  return {
    writes: [{ op: 'del', key: K.joining(zone, id) }, { op: 'unindex', key: K.joiningOf(zone), member: `${zone}/${id}` }],
    result: undefined,
  };
}
