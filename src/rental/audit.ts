import { codec, decodeList } from '../store/codec.js';
import { across, newestAcross, partitionKey, partitionKeyFor, partitionOf, type Store } from '../store/port.js';
import { recordKey } from '../intake/index.js';
import { PARTNER_USER, type SignInAttempt } from '../auth/index.js';

/**
 * Store keys of rental review, and the partner's audit trail. The indexes and lists are kept per
 * partition (`rental:all:{#p}`...), written beside the application's record in its own update
 * (`keysOf`), and merged on read with these global keys of before the partitions, which an
 * application registered before them keeps using.
 */
export const K = {
  /** Every rental application, score = creation time. */
  all: 'rental:all',
  /** Applications in one status, score = creation time (moved in the same update as the status). */
  status: (status: string) => `rental:status:${status}`,
  /** Capped list of status moves (StatusEvent), oldest first. */
  events: 'rental:events',
  /** Capped list of partner actions and login attempts (AuditEntry), oldest first. */
  audit: 'rental:audit',
  /**
   * Blob key -> application id, written on its own before the record that names the blob (an
   * aggregate of its own); the orphan sweep keeps a blob whose pointer names a record holding it.
   */
  blob: (key: string) => `rental:blob:${key}`,
} as const;

/** The indexes and lists an application's updates write. */
export interface RentalKeys {
  all: string;
  status: (status: string) => string;
  events: string;
  audit: string;
}

/** Where an application's indexes are: beside its record (`partition`), or the global keys of before. */
export type Layout = 'partition' | 'global';

/** The keys of an application's updates in its layout. */
export function keysOf(id: string, layout: Layout): RentalKeys {
  if (layout === 'global') return { all: K.all, status: K.status, events: K.events, audit: K.audit };
  const near = recordKey(id);
  return {
    all: partitionKeyFor(K.all, near),
    status: (status) => partitionKeyFor(K.status(status), near),
    events: partitionKeyFor(K.events, near),
    audit: partitionKeyFor(K.audit, near),
  };
}

/** The layout of an application: global when the global index of before lists it. */
export async function layoutOf(store: Store, id: string): Promise<Layout> {
  return (await store.indexScore(K.all, id)) !== undefined ? 'global' : 'partition';
}

/** Audit lines that belong to no application's update (logins, lists, refusals): one partition's list. */
export const LOOSE_AUDIT = partitionKey(K.audit, partitionOf(K.audit));

export const AUDIT_CAP = 20_000;

/**
 * One line of the partner's audit trail: who (`actor`: the account id, or `-` for a failed login),
 * from where (`client`: the address), what (`action`: login, logout, list, export, check,
 * download), on what (`target`: receipt number and document), and how it ended (`result`).
 */
export interface AuditEntry {
  at: string;
  actor: string;
  client: string;
  action: 'login' | 'logout' | 'list' | 'export' | 'check' | 'download';
  target: string | null;
  result: string;
  detail: string | null;
}

/** Stored audit lines (the rental service writes refusals through it too). */
export const auditEntries = codec<AuditEntry>('partner audit entry', (r) => typeof r.action === 'string' && typeof r.at === 'string');

export class PartnerAudit {
  constructor(private readonly store: Store, private readonly now: () => number) {}

  async record(entry: Omit<AuditEntry, 'at'>): Promise<void> {
    const full: AuditEntry = { at: new Date(this.now()).toISOString(), ...entry };
    await this.store.push(LOOSE_AUDIT, auditEntries.encode(full), AUDIT_CAP);
  }

  /**
   * A sign-in or sign-out of a partner, as identity told it (its `signIns` port): a login or logout
   * of an account holding the partner role, and a failed login of the partner account (actor `-`).
   * Other accounts' attempts are not the partner's trail.
   */
  async signIn(a: SignInAttempt): Promise<void> {
    const partner = a.roles?.includes('partner') ?? a.user === PARTNER_USER;
    if (!partner) return;
    const signedIn = a.action === 'logout' || a.result === 'ok';
    await this.record({ actor: signedIn ? a.user : '-', client: a.client, action: a.action, target: null, result: a.result, detail: null });
  }

  /**
   * Newest first, from every partition's list and the global one of before. Lines of the same
   * instant in different lists have no order between them: the list of no application's update
   * (logins, lists, exports, downloads) is read first, so its lines come first among them.
   */
  async entries(limit = 100): Promise<AuditEntry[]> {
    const keys = [LOOSE_AUDIT, ...across(K.audit).filter((k) => k !== LOOSE_AUDIT)];
    return newestAcross(this.store, keys, Math.max(1, limit), (v) => decodeList(auditEntries, [v])[0]);
  }
}

