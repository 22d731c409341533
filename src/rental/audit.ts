import { codec, decodeList } from '../store/codec.js';
import type { Store } from '../store/port.js';

/** Store keys of rental review, and the partner's audit trail. */
export const K = {
  /** Every rental application, score = creation time. */
  all: 'rental:all',
  /** Applications in one status, score = creation time (moved in the same update as the status). */
  status: (status: string) => `rental:status:${status}`,
  /** Capped list of status moves (StatusEvent), oldest first. */
  events: 'rental:events',
  /** Capped list of partner actions and login attempts (AuditEntry), oldest first. */
  audit: 'rental:audit',
  /** Blob key -> application id, for every stored document (the orphan sweep asks). */
  blob: (key: string) => `rental:blob:${key}`,
} as const;

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
    await this.store.push(K.audit, auditEntries.encode(full), AUDIT_CAP);
  }

  /** Newest first. */
  async entries(limit = 100): Promise<AuditEntry[]> {
    return decodeList(auditEntries, await this.store.range(K.audit, -Math.max(1, limit), -1)).reverse();
  }
}

