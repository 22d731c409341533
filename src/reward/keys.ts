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

  /** Aggregate of the reward ledger: seq, credits, exchanges, units, ru_earned, ru_burned, cu_minted. */
  totals: `${P}totals`,
  /** One reward ledger entry, by its sequence number. */
  entry: (seq: number) => `${P}ledger:entry:${seq}`,
  /** Global index of ledger entries (member = seq, score = seq). */
  ledger: `${P}ledger`,
  /** A member's ledger entries (member = seq, score = seq). */
  memberLedger: (id: string) => `${P}ledger:member:${id}`,

  /** Ecosystem ledger aggregate: seq, total, and one total per category. */
  eco: `${P}eco`,
  /** One ecosystem entry, by its ecosystem sequence number. */
  ecoEntry: (seq: number) => `${P}eco:entry:${seq}`,
  /** Index of ecosystem entries (member = seq, score = seq). */
  ecoIndex: `${P}eco:entries`,
  /** Sync cursor of the value service payload: { seq, at }. */
  ecoCursor: `${P}eco:cursor`,

  /** Reserve pool aggregate: balance, credits, lots, lots_cu, obligation, by_stage. */
  reserve: `${P}reserve`,
  /** Index of exchange lots (member = ledger seq, score = seq). */
  lots: `${P}reserve:lots`,
} as const;

/** Index members are strings; sequence numbers are written zero-padded so byte order = number order. */
export const seqMember = (seq: number): string => String(seq).padStart(12, '0');
