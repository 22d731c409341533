import type { Drawn } from '../store/port.js';

/**
 * Store keys of the reward plan. One place, so the layout is easy to read and to migrate.
 * Amount fields of every stored record are integer hundredths.
 */
const P = 'reward:';

export const K = {
  /** Member record (eight fields): id, name, grade, grade_name, kc, ru, cu, excess. */
  member: (id: string) => `${P}member:${id}`,
  /** Member's other facts: zone, public_key, created_at. */
  memberMeta: (id: string) => `${P}member-meta:${id}`,
  /** Index of every member, score = creation time. */
  members: `${P}members`,

  /** Zone record: id, country, lang, name, key, members (count), created_at. */
  zone: (id: string) => `${P}zone:${id}`,
  /** Index of every zone, score = creation time. */
  zones: `${P}zones`,
  /** Index of a zone's members, score = creation time. */
  zoneMembers: (id: string) => `${P}zone-members:${id}`,

  /** Work session record of one member and KST calendar month: { month, units, days }. */
  session: (id: string, month: string) => `${P}session:${id}:${month}`,
  /** Index of a member's session months, score = yyyymm. */
  sessionMonths: (id: string) => `${P}session-months:${id}`,

  /**
   * One reward ledger entry, by its sequence number (1, 2, 3, ... in commit order, no gaps; a
   * movement writes it under the placeholder of the seq it draws in its commit).
   */
  entry: (seq: number | Drawn) => `${P}ledger:entry:${seq}`,
  /** A member's ledger entries (member = seq, score = seq). */
  memberLedger: (id: string) => `${P}ledger:member:${id}`,

  /** One ecosystem entry, by its ecosystem sequence number (one per credit, no gaps). */
  ecoEntry: (seq: number | Drawn) => `${P}eco:entry:${seq}`,
  /** Sync cursor of the value service payload: { seq, at }. */
  ecoCursor: `${P}eco:cursor`,

  /** Index of exchange lots (member = ledger seq, score = seq). */
  lots: `${P}reserve:lots`,

  /**
   * The aggregates, one integer counter each (amounts in hundredths), added to by `incr` writes in
   * the movement's own update: no shared record is read and rewritten. Figures that always move
   * together are kept once: the RU earned is also the ecosystem total and the reserve balance
   * (each credit adds the same amount to all three); the RU burned is also the CU minted and the
   * CU of the reserve lots (1:1); the credits are the ecosystem entries, the exchanges the lots.
   * Two of them number the ledgers and are drawn from inside the movement's commit (store.update
   * with `draw`), never read by it: `entries` (the last reward ledger seq, = credits + exchanges)
   * and `credits` (the last ecosystem seq).
   */
  n: {
    entries: `${P}n:entries`,
    credits: `${P}n:credits`,
    exchanges: `${P}n:exchanges`,
    units: `${P}n:units`,
    ruEarned: `${P}n:ru_earned`,
    ruBurned: `${P}n:ru_burned`,
    /** Three of the four ecosystem categories; infrastructure is the total minus these. */
    ecoService: `${P}n:eco:service`,
    ecoModule: `${P}n:eco:module`,
    ecoContent: `${P}n:eco:content`,
    /** Maturity obligation of every lot. */
    obligation: `${P}n:obligation`,
    /** Lots, their CU and their obligation, per stage of the exchange. */
    stageLots: (stage: string) => `${P}n:stage:${stage}:lots`,
    stageCu: (stage: string) => `${P}n:stage:${stage}:cu`,
    stageObligation: (stage: string) => `${P}n:stage:${stage}:obligation`,
  },

  /** Records of the layout before the counters (read once by the upgrade, then deleted). */
  legacy: { totals: `${P}totals`, eco: `${P}eco`, reserve: `${P}reserve`, ledger: `${P}ledger`, ecoIndex: `${P}eco:entries` },
} as const;

/** Index members are strings; sequence numbers are written zero-padded so byte order = number order. */
export const SEQ_WIDTH = 12;
