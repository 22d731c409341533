import { partitionKeyFor, partitionKeys, type Drawn } from '../store/port.js';

/**
 * Store keys of the reward plan. One place, so the layout is easy to read and to migrate.
 * Amount fields of every stored record are integer hundredths.
 */
const P = 'reward:';

/** The tag of the reward ledgers' aggregate: every ledger key carries it (docs/partitions.md). */
const L = `${P}{reward-ledger}:`;

export const K = {
  /** Member record (eight fields): id, name, grade, grade_name, kc, ru, cu, excess. */
  member: (id: string) => `${P}member:${id}`,
  /** Member's other facts: zone, public_key, created_at (under the member: one aggregate). */
  memberMeta: (id: string) => `${P}member:${id}:meta`,
  /** A movement of the member not yet carried to the ledgers (movements.ts; removed once it is). */
  pending: (id: string, movementId: string) => `${P}member:${id}:pending:${movementId}`,
  /** A credit made once for a retried request (its id given by the caller): its outcome, kept a day. */
  credited: (id: string, creditId: string) => `${P}member:${id}:credited:${creditId}`,
  /** Index of every member, per partition (`reward:members:{#p}`), written beside the member. */
  membersOf: (id: string) => partitionKeyFor(`${P}members`, `${P}member:${id}`),
  /** Every member index: the global one of before the partitions, then each partition's (merged on read). */
  allMembers: [`${P}members`, ...partitionKeys(`${P}members`)] as string[],
  /** Movements not yet carried to the ledgers, per partition (member = `<member id>/<movement id>`). */
  pendingOf: (id: string) => partitionKeyFor(`${P}pending`, `${P}member:${id}`),
  allPending: partitionKeys(`${P}pending`),

  /** Zone record: id, country, lang, name, key, members (count), created_at. */
  zone: (id: string) => `${P}zone:${id}`,
  /** Index of every zone, score = creation time: the global one of before the partitions (still read). */
  zones: `${P}zones`,
  /** The zone index of a zone's partition (`reward:zones:{#p}`), written with the zone (docs/partitions.md). */
  zonesOf: (id: string) => partitionKeyFor(`${P}zones`, `${P}zone:${id}`),
  /** Every zone index: the global one, then each partition's (merged on read). */
  allZones: [`${P}zones`, ...partitionKeys(`${P}zones`)] as string[],
  /** Index of a zone's members, score = creation time (under the zone: one aggregate). */
  zoneMembers: (id: string) => `${P}zone:${id}:members`,
  /** A member counted by its zone, not yet created (registry.ts; removed once it is). */
  joining: (zone: string, id: string) => `${P}zone:${zone}:joining:${id}`,
  /** Members counted by their zone and not yet created, per partition (member = `<zone>/<id>`). */
  joiningOf: (zone: string) => partitionKeyFor(`${P}joining`, `${P}zone:${zone}`),
  allJoining: partitionKeys(`${P}joining`),

  /** Work session record of one member and KST calendar month: { month, units, days }. */
  session: (id: string, month: string) => `${P}member:${id}:session:${month}`,
  /** Index of a member's session months, score = yyyymm. */
  sessionMonths: (id: string) => `${P}member:${id}:session-months`,

  /**
   * One reward ledger entry, by its sequence number (1, 2, 3, ... in commit order, no gaps; a
   * movement writes it under the placeholder of the seq it draws in its commit).
   */
  entry: (seq: number | Drawn) => `${L}entry:${seq}`,
  /** A member's ledger entries (member = seq, score = seq). */
  memberLedger: (id: string) => `${L}member:${id}`,

  /** One ecosystem entry, by its ecosystem sequence number (one per credit, no gaps). */
  ecoEntry: (seq: number | Drawn) => `${L}eco:${seq}`,
  /** Sync cursor of the value service payload: { seq, at }. */
  ecoCursor: `${L}eco-cursor`,

  /** Index of exchange lots (member = ledger seq, score = seq). */
  lots: `${L}lots`,

  /** A movement carried to the ledgers: its ledger seq (and a credit's ecosystem seq). */
  applied: (movementId: string) => `${L}applied:${movementId}`,
  /** Set once the figures of the layouts before the ledger aggregate are in its counters. */
  layout: `${L}layout`,

  /**
   * The aggregates, one integer counter each (amounts in hundredths), added to by `incr` writes in
   * the ledger update of each movement: no shared record is read and rewritten. Figures that always
   * move together are kept once: the RU earned is also the ecosystem total and the reserve balance
   * (each credit adds the same amount to all three); the RU burned is also the CU minted and the
   * CU of the reserve lots (1:1); the credits are the ecosystem entries, the exchanges the lots.
   * Two of them number the ledgers and are drawn from inside the ledger update (store.update
   * with `draw`), never read by it: `entries` (the last reward ledger seq, = credits + exchanges)
   * and `credits` (the last ecosystem seq).
   */
  n: counters(L),

  /** The keys of before the ledger aggregate (still read: entries by seq, a member's ledger, the cursor). */
  old: {
    memberMeta: (id: string) => `${P}member-meta:${id}`,
    session: (id: string, month: string) => `${P}session:${id}:${month}`,
    sessionMonths: (id: string) => `${P}session-months:${id}`,
    zoneMembers: (id: string) => `${P}zone-members:${id}`,
    entry: (seq: number) => `${P}ledger:entry:${seq}`,
    memberLedger: (id: string) => `${P}ledger:member:${id}`,
    ecoEntry: (seq: number) => `${P}eco:entry:${seq}`,
    ecoCursor: `${P}eco:cursor`,
    n: counters(P),
  },

  /** Records of the layout before the counters (read once by the upgrade, then deleted). */
  legacy: { totals: `${P}totals`, eco: `${P}eco`, reserve: `${P}reserve`, ledger: `${P}ledger`, ecoIndex: `${P}eco:entries` },
} as const;

function counters(base: string) {
  return {
    entries: `${base}n:entries`,
    credits: `${base}n:credits`,
    exchanges: `${base}n:exchanges`,
    units: `${base}n:units`,
    ruEarned: `${base}n:ru_earned`,
    ruBurned: `${base}n:ru_burned`,
    /** Three of the four ecosystem categories; infrastructure is the total minus these. */
    ecoService: `${base}n:eco:service`,
    ecoModule: `${base}n:eco:module`,
    ecoContent: `${base}n:eco:content`,
    /** Maturity obligation of every lot. */
    obligation: `${base}n:obligation`,
    /** Lots, their CU and their obligation, per stage of the exchange. */
    stageLots: (stage: string) => `${base}n:stage:${stage}:lots`,
    stageCu: (stage: string) => `${base}n:stage:${stage}:cu`,
    stageObligation: (stage: string) => `${base}n:stage:${stage}:obligation`,
  };
}

/** Index members are strings; sequence numbers are written zero-padded so byte order = number order. */
export const SEQ_WIDTH = 12;
