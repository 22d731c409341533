import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { AppError, conflict, notFound } from '../errors.js';
import { codec, decodeList, F, optional, plain } from '../store/codec.js';
import { mergedIndexRange, PARTITIONS, partitionKey, partitionKeys, partitionOf, type Json, type Store, type Write } from '../store/port.js';
import { hashPassword, verifyPassword } from './passwords.js';

/**
 * The one identity model (docs/auth.md): accounts with roles, opaque session tokens kept in the
 * Store (valid on every process, revocable, expiring), and device tokens for scanner gates.
 *
 * Tokens are 256-bit random values; only their SHA-256 is stored, so a leaked store does not
 * leak usable tokens. Every login issues a new token (rotation); logout and any change of an
 * account's password, roles or state revoke its tokens.
 *
 * Partitions (docs/partitions.md, docs/auth.md): an account (`auth:account:<user>`, its token index
 * `auth:account:<user>:tokens`) and a device (`auth:device:<id>`) are aggregates. A token's first
 * byte carries the partition of the account or device it belongs to (6 of its 256 random bits), and
 * the token record is kept in that partition (`auth:token:<sha256>:{#p}`), so issuing, revoking and
 * logging out are each one atomic update of one partition, and authenticate is one read. The lists
 * of accounts and devices are kept per partition (`auth:accounts:{#p}`, `auth:devices:{#p}`) and
 * merged on read. Records written before (global `auth:accounts`, `auth:devices`, `auth:tokens:<user>`,
 * `auth:token:<sha256>`) are still read; their tokens are revoked right after the account's update.
 */

export const ROLES = ['operator', 'staff', 'partner', 'editor', 'trader'] as const;
export type Role = (typeof ROLES)[number];
/** The role of device tokens (scanners at a gate); never held by an account. */
export const DEVICE_ROLE = 'scanner';
export const SUPER_ROLE: Role = 'operator';
export const ADMIN_USER = 'admin';
export const PARTNER_USER = 'partner';

export interface Identity {
  id: string;
  name: string;
  roles: string[];
  kind: 'account' | 'device';
  gate?: string;
}

interface AccountRecord {
  user: string;
  name: string;
  roles: Role[];
  hash: string;
  disabled: boolean;
  created_at: number;
  /** Where the account is told things by mail (a document comment that mentions it); optional. */
  email?: string;
}

interface TokenRecord {
  id: string;
  name: string;
  roles: string[];
  kind: 'account' | 'device';
  gate?: string;
  /** Devices: the device id (for revocation). */
  device?: string;
  expires_at: number;
}

const tokens = codec<TokenRecord>('token', (r) => typeof r.id === 'string' && typeof r.expires_at === 'number');

interface DeviceRecord {
  id: string;
  gate: string;
  name: string;
  token_hash: string;
  issued_by: string;
  created_at: number;
  expires_at: number;
}

const strs: (v: Json | undefined) => boolean = (v) => Array.isArray(v) && v.every(F.str);
const accounts = codec<AccountRecord>('account', {
  fields: { user: F.str, name: F.str, roles: strs, hash: F.str, disabled: (v) => typeof v === 'boolean', created_at: F.num, email: optional(F.str) },
});
const devices = codec<DeviceRecord>('device', {
  fields: { id: F.str, gate: F.str, name: F.str, token_hash: F.str, issued_by: F.str, created_at: F.num, expires_at: F.num },
});
/** Failed logins counted in a window. */
const failures = plain<number>('failed-login count', F.int);

export interface AccountView {
  user: string;
  name: string;
  roles: Role[];
  disabled: boolean;
  createdAt: string;
  email?: string;
}

export interface DeviceView {
  id: string;
  gate: string;
  name: string;
  issuedBy: string;
  createdAt: string;
  expiresAt: string;
}

export interface IssuedToken {
  token: string;
  expiresAt: string;
  roles: string[];
}

export interface LoginLimits {
  /** Failed logins allowed per (account, address) pair in a window. */
  perPair: number;
  /** Failed logins allowed per address (any account) in a window. */
  perAddress: number;
  /** Failed logins allowed per account from all addresses together (slows a distributed guess). */
  perAccount: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perPair: 5, perAddress: 30, perAccount: 100, windowMs: 15 * 60_000 };

export interface AuthServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  tokenTtlMs: number;
  partnerTokenTtlMs: number;
  deviceTokenTtlMs: number;
  limits?: Partial<LoginLimits>;
}

const K = {
  account: (user: string) => `auth:account:${user}`,
  /** The list of accounts of partition p (score: creation time). */
  accountsIn: (p: number) => partitionKey('auth:accounts', p),
  /** A token record, in the partition of its account or device. */
  token: (hash: string, p: number) => partitionKey(`auth:token:${hash}`, p),
  /** Index of an account's live token hashes (score: expiry), for revocation: in the account's aggregate. */
  tokensOf: (user: string) => `auth:account:${user}:tokens`,
  device: (id: string) => `auth:device:${id}`,
  devicesIn: (p: number) => partitionKey('auth:devices', p),
  fail: (kind: string, who: string, window: number) => `auth:fail:${kind}:${window}:${who}`,
  /** Written before the keyspace was partitioned: read, never written. */
  legacy: {
    accounts: 'auth:accounts',
    devices: 'auth:devices',
    token: (hash: string) => `auth:token:${hash}`,
    tokensOf: (user: string) => `auth:tokens:${user}`,
  },
};

const ACCOUNT_LISTS = [K.legacy.accounts, ...partitionKeys('auth:accounts')];
const DEVICE_LISTS = [K.legacy.devices, ...partitionKeys('auth:devices')];

export const USER_RE = /^[a-z0-9][a-z0-9._-]{1,31}$/;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** A new token whose first byte's low 6 bits name partition p (the rest stays random: 250 bits). */
const newToken = (p: number) => {
  const bytes = randomBytes(32);
  bytes[0] = (bytes[0]! & ~(PARTITIONS - 1)) | p;
  return `mt_${bytes.toString('base64url')}`;
};
/** The partition a token names (its first byte), or undefined when it has no byte. */
const tokenPartition = (token: string): number | undefined => {
  const first = Buffer.from(token.slice(3, 5), 'base64url')[0];
  return first === undefined ? undefined : first & (PARTITIONS - 1);
};
const iso = (ms: number) => new Date(ms).toISOString();

export class AuthService {
  private readonly limits: LoginLimits;
  /** The passwords this start generated (bootstrap), for the start-up banner (src/banner.ts). */
  readonly generated: { user: string; password: string }[] = [];

  constructor(private readonly opts: AuthServiceOptions) {
    this.limits = { ...DEFAULT_LOGIN_LIMITS, ...opts.limits };
  }

  /**
   * The operator `admin` and the rental `partner` exist from the first start. A configured
   * password is (re)applied at every start; without one, a random password is made once, printed
   * once in the log and kept only as a hash (set-if-absent, so two processes print one).
   */
  async bootstrap(passwords: { admin?: string; partner?: string }): Promise<void> {
    await this.ensureAccount(ADMIN_USER, '운영자', ['operator'], passwords.admin);
    await this.ensureAccount(PARTNER_USER, '렌탈 파트너', ['partner'], passwords.partner);
  }

  private async ensureAccount(user: string, name: string, roles: Role[], password: string | undefined): Promise<void> {
    const existing = accounts.decode(await this.opts.store.get(K.account(user)));
    if (existing && (!password || (await verifyPassword(existing.hash, password)))) return;
    if (existing && password) {
      await this.updateAccount(user, { password });
      this.opts.logger.info({ user }, 'account password set from the configuration');
      return;
    }
    const generated = password ?? randomBytes(12).toString('base64url');
    const created = await this.writeNewAccount({ user, name, roles, password: generated });
    if (created && !password) {
      this.generated.push({ user, password: generated });
      this.opts.logger.warn(
        { user, password: generated },
        `generated a password for "${user}" (shown once; set ${user === ADMIN_USER ? 'ADMIN_PASSWORD' : 'PARTNER_PASSWORD'} to choose it)`,
      );
    }
  }

  private async writeNewAccount(input: { user: string; name: string; roles: Role[]; password: string; email?: string | undefined }): Promise<boolean> {
    const now = this.opts.clock.now();
    const record: AccountRecord = {
      user: input.user,
      name: input.name,
      roles: [...new Set(input.roles)],
      hash: await hashPassword(input.password),
      disabled: false,
      created_at: now,
      ...(input.email ? { email: input.email } : {}),
    };
    return this.opts.store.update([K.account(input.user)], ([cur]) => {
      if (cur !== undefined) return { writes: [], result: false };
      return {
        writes: [
          { op: 'set', key: K.account(input.user), value: accounts.encode(record) },
          { op: 'index', key: K.accountsIn(partitionOf(K.account(input.user))), member: input.user, score: now },
        ],
        result: true,
      };
    });
  }

  // ---- accounts -----------------------------------------------------------------------------

  async createAccount(input: { user: string; name?: string; roles: Role[]; password: string; email?: string }): Promise<AccountView> {
    const created = await this.writeNewAccount({ ...input, name: input.name ?? input.user });
    if (!created) throw conflict('account_exists', `an account named ${input.user} exists`, { user: input.user });
    return this.account(input.user);
  }

  async account(user: string): Promise<AccountView> {
    const rec = accounts.decode(await this.opts.store.get(K.account(user)));
    if (!rec) throw notFound('unknown_account', `no account ${user}`);
    return accountView(rec);
  }

  async accounts(): Promise<AccountView[]> {
    const users = await mergedIndexRange(this.opts.store, ACCOUNT_LISTS);
    return decodeList(accounts, await this.opts.store.getMany(users.map((u) => K.account(u.member)))).map(accountView);
  }

  /** Changes an account; a new password, new roles or disabling revokes every token it holds. */
  async updateAccount(user: string, change: { name?: string; roles?: Role[]; password?: string; disabled?: boolean; email?: string | null }): Promise<AccountView> {
    const hash = change.password !== undefined ? await hashPassword(change.password) : undefined;
    const p = partitionOf(K.account(user));
    const live = await this.opts.store.indexRange(K.tokensOf(user));
    let revoked = false;
    const view = await this.opts.store.update([K.account(user)], ([cur]) => {
      const rec = accounts.decode(cur);
      if (!rec) throw notFound('unknown_account', `no account ${user}`);
      if (user === ADMIN_USER && (change.disabled || (change.roles && !change.roles.includes('operator')))) {
        throw conflict('last_operator', 'the admin account keeps the operator role and cannot be disabled');
      }
      const next: AccountRecord = {
        ...rec,
        ...(change.name !== undefined ? { name: change.name } : {}),
        ...(change.roles !== undefined ? { roles: [...new Set(change.roles)] } : {}),
        ...(change.disabled !== undefined ? { disabled: change.disabled } : {}),
        ...(hash !== undefined ? { hash } : {}),
        ...(change.email ? { email: change.email } : {}),
      };
      // null forgets the address
      if (change.email === null) delete next.email;
      revoked = hash !== undefined || change.roles !== undefined || change.disabled === true;
      const writes: Write[] = [{ op: 'set', key: K.account(user), value: accounts.encode(next) }];
      if (revoked) writes.push(...this.revocation(user, p, live));
      return { writes, result: accountView(next) };
    });
    if (revoked) await this.revokeLegacy(user);
    return view;
  }

  /** The writes that end every token of an account (its token records and its index), one partition. */
  private revocation(user: string, p: number, live: { member: string }[]): Write[] {
    const writes: Write[] = live.map((t) => ({ op: 'del', key: K.token(t.member, p) }));
    writes.push({ op: 'del', key: K.tokensOf(user) });
    return writes;
  }

  /** Tokens issued before the partitioned layout (global keys): revoked right after the account's update. */
  private async revokeLegacy(user: string): Promise<number> {
    const old = await this.opts.store.indexRange(K.legacy.tokensOf(user));
    for (const t of old) await this.opts.store.del(K.legacy.token(t.member));
    if (old.length > 0) await this.opts.store.del(K.legacy.tokensOf(user));
    return old.length;
  }

  /**
   * Revokes every login token of an account (the operator console's "disconnect and revoke"): its
   * open connections end at their next check (or at once, through the console). Resolves with how
   * many tokens were live; 404 `unknown_account` when there is no such account.
   */
  async revokeTokens(user: string): Promise<number> {
    if (!USER_RE.test(user)) throw notFound('unknown_account', `no account ${user}`);
    const p = partitionOf(K.account(user));
    const live = await this.opts.store.indexRange(K.tokensOf(user));
    const count = await this.opts.store.update([K.account(user)], ([cur]) => {
      if (!accounts.decode(cur)) throw notFound('unknown_account', `no account ${user}`);
      return { writes: this.revocation(user, p, live), result: live.length };
    });
    return count + (await this.revokeLegacy(user));
  }

  // ---- sessions -----------------------------------------------------------------------------

  /**
   * Password login. Failed attempts are counted per (account, address), per address and per
   * account; past a limit the answer is 429 with Retry-After until the window ends. The pair
   * limit is what a guesser at one address meets; the account-wide limit is high, so another
   * address cannot lock the owner out by failing on purpose.
   */
  async login(user: string, password: string, client: string): Promise<IssuedToken & { user: string; name: string }> {
    const now = this.opts.clock.now();
    const window = Math.floor(now / this.limits.windowMs);
    const keys = [K.fail('pair', `${user}|${client}`, window), K.fail('addr', client, window), K.fail('acct', user, window)];
    const caps = [this.limits.perPair, this.limits.perAddress, this.limits.perAccount];
    const counts = failures.decodeMany(await this.opts.store.getMany(keys));
    if (counts.some((c, i) => (c ?? 0) >= caps[i]!)) {
      const retryAfterS = Math.max(1, Math.ceil(((window + 1) * this.limits.windowMs - now) / 1000));
      throw new AppError('rate_limited', 'too_many_attempts', 'too many failed logins: wait before trying again', { retry_after_s: retryAfterS });
    }
    const rec = USER_RE.test(user) ? accounts.decode(await this.opts.store.get(K.account(user))) : undefined;
    const ok = await verifyPassword(rec?.hash, password);
    if (!ok || !rec || rec.disabled) {
      await Promise.all(keys.map((k) => this.bump(k)));
      throw new AppError('unauthorized', 'invalid_credentials', 'the user or the password is wrong');
    }
    const ttl = user === PARTNER_USER ? this.opts.partnerTokenTtlMs : this.opts.tokenTtlMs;
    const issued = await this.issue({ id: rec.user, name: rec.name, roles: rec.roles, kind: 'account' }, ttl);
    return { ...issued, user: rec.user, name: rec.name };
  }

  private bump(key: string): Promise<void> {
    const ttlMs = this.limits.windowMs * 2;
    return this.opts.store.update([key], ([cur]) => ({
      writes: [{ op: 'set', key, value: (typeof cur === 'number' ? cur : 0) + 1, ttlMs }],
      result: undefined,
    }));
  }

  private async issue(identity: Identity & { device?: string }, ttlMs: number): Promise<IssuedToken & { hash: string }> {
    // the token's record and the account's index of it: one partition, the account's (or the device's)
    const owner = identity.kind === 'account' ? K.account(identity.id) : K.device(identity.device ?? identity.id);
    const p = partitionOf(owner);
    const token = newToken(p);
    const hash = sha256(token);
    const expiresAt = this.opts.clock.now() + ttlMs;
    const rec: TokenRecord = { ...identity, expires_at: expiresAt };
    if (rec.gate === undefined) delete rec.gate;
    if (rec.device === undefined) delete rec.device;
    const writes: Write[] = [{ op: 'set', key: K.token(hash, p), value: tokens.encode(rec), ttlMs }];
    if (identity.kind === 'account') writes.push({ op: 'index', key: K.tokensOf(identity.id), member: hash, score: expiresAt });
    await this.opts.store.update([], () => ({ writes, result: undefined }));
    return { token, hash, expiresAt: iso(expiresAt), roles: identity.roles };
  }

  /** The identity behind a token, or undefined (unknown, revoked or expired). */
  async authenticate(token: string): Promise<Identity | undefined> {
    if (!token.startsWith('mt_') || token.length > 100) return undefined;
    const hash = sha256(token);
    const p = tokenPartition(token);
    let raw = p === undefined ? undefined : await this.opts.store.get(K.token(hash, p));
    // a token issued before the partitioned layout
    if (raw === undefined) raw = await this.opts.store.get(K.legacy.token(hash));
    const rec = tokens.decode(raw);
    if (!rec || rec.expires_at <= this.opts.clock.now()) return undefined;
    const identity: Identity = { id: rec.id, name: rec.name, roles: rec.roles, kind: rec.kind };
    if (rec.gate !== undefined) identity.gate = rec.gate;
    return identity;
  }

  /** Revokes one token (logout). */
  async logout(token: string, user: string): Promise<void> {
    const hash = sha256(token);
    const p = partitionOf(K.account(user));
    if (tokenPartition(token) === p) {
      await this.opts.store.update([], () => ({
        writes: [
          { op: 'del', key: K.token(hash, p) },
          { op: 'unindex', key: K.tokensOf(user), member: hash },
        ],
        result: undefined,
      }));
    }
    // a token issued before the partitioned layout
    if (await this.opts.store.del(K.legacy.token(hash))) await this.opts.store.unindex(K.legacy.tokensOf(user), hash);
  }

  // ---- devices ------------------------------------------------------------------------------

  /** A scanner token for a named gate (pretixSCAN's device model): check-ins record its gate and name. */
  async issueDevice(input: { gate: string; name: string }, issuedBy: string): Promise<{ token: string; device: DeviceView }> {
    const id = `d_${randomBytes(6).toString('hex')}`;
    const issued = await this.issue(
      { id, name: input.name, roles: [DEVICE_ROLE], kind: 'device', gate: input.gate, device: id },
      this.opts.deviceTokenTtlMs,
    );
    const now = this.opts.clock.now();
    const rec: DeviceRecord = {
      id,
      gate: input.gate,
      name: input.name,
      token_hash: issued.hash,
      issued_by: issuedBy,
      created_at: now,
      expires_at: now + this.opts.deviceTokenTtlMs,
    };
    await this.opts.store.update([], () => ({
      writes: [
        { op: 'set', key: K.device(id), value: devices.encode(rec) },
        { op: 'index', key: K.devicesIn(partitionOf(K.device(id))), member: id, score: now },
      ],
      result: undefined,
    }));
    return { token: issued.token, device: deviceView(rec) };
  }

  async devices(): Promise<DeviceView[]> {
    const ids = await mergedIndexRange(this.opts.store, DEVICE_LISTS, { reverse: true });
    return decodeList(devices, await this.opts.store.getMany(ids.map((d) => K.device(d.member)))).map(deviceView);
  }

  async revokeDevice(id: string): Promise<{ revoked: true; id: string }> {
    const p = partitionOf(K.device(id));
    const result = await this.opts.store.update([K.device(id)], ([cur]) => {
      const rec = devices.decode(cur);
      if (!rec) throw notFound('unknown_device', `no device ${id}`);
      return {
        writes: [
          { op: 'del', key: K.token(rec.token_hash, p) },
          { op: 'del', key: K.device(id) },
          { op: 'unindex', key: K.devicesIn(p), member: id },
        ],
        result: { revoked: true as const, id, hash: rec.token_hash },
      };
    });
    // a device issued before the partitioned layout
    await this.opts.store.del(K.legacy.token(result.hash));
    await this.opts.store.unindex(K.legacy.devices, id);
    return { revoked: true, id };
  }
}

function accountView(r: AccountRecord): AccountView {
  return { user: r.user, name: r.name, roles: r.roles, disabled: r.disabled, createdAt: iso(r.created_at), ...(r.email ? { email: r.email } : {}) };
}

function deviceView(r: DeviceRecord): DeviceView {
  return { id: r.id, gate: r.gate, name: r.name, issuedBy: r.issued_by, createdAt: iso(r.created_at), expiresAt: iso(r.expires_at) };
}
