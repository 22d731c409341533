import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { codec, decodeList } from '../store/codec.js';
import type { Json, Store } from '../store/port.js';
import { outboxWrites, type Deliver } from '../outbox.js';
import { maskName, maskPhone } from './contact.js';
import { parseReferralCode, referralCode } from './referral-code.js';

/**
 * Referrals: a customer's code (see referral-code.ts), its owner, its uses and the rewards it
 * granted. A redemption (a new customer's registration carrying the code) gives one reward entry to
 * each side, once per referred customer; nobody redeems their own code.
 *
 * A redemption spans two customers, so it is two updates, each of one aggregate (docs/partitions.md):
 * the referred customer's claim (`referral:redeemed:<id>`, written once, with an outbox item in its
 * partition) and the owner's credit (the owner record, its reward list and a marker of the referred
 * customer under it, so a credit is applied once). The claim's item carries the credit: redeem()
 * applies it right after the claim, and the outbox delivers the item to the same credit, which
 * finds it done; a process stopped between the two leaves the item, which credits the owner then.
 */
/** Outbox destination of a claimed redemption's owner credit. */
export const REFERRAL_DEST = 'referral-credit';

export interface ReferralOwner {
  code: string;
  customerId: number;
  name: string;
  phone: string;
  uses: number;
  createdAt: string;
}

export interface RewardEntry {
  code: string;
  side: 'owner' | 'referred';
  /** Who receives the reward. */
  customerId: number;
  referredCustomerId: number;
  at: string;
}

export interface ReferralInfo {
  code: string;
  owner: { customerId: number; name: string; phone: string };
  uses: number;
  rewards: RewardEntry[];
  createdAt: string;
}

const K = {
  owner: (id: number) => `referral:owner:${id}`,
  redeemed: (referredCustomerId: number) => `referral:redeemed:${referredCustomerId}`,
  /** The owner's reward entries (under the owner record: one aggregate). */
  rewards: (id: number) => `referral:owner:${id}:rewards`,
  /** The owner was credited for this referred customer. */
  credited: (id: number, referredCustomerId: number) => `referral:owner:${id}:credited:${referredCustomerId}`,
  /** Reward entries of before the partitions (still read, older than every entry of `rewards`). */
  oldRewards: (id: number) => `referral:rewards:${id}`,
};

/** What a claim's outbox item carries to the owner's credit. */
interface Credit {
  code: string;
  owner: number;
  referred: number;
  at: string;
}
const credits = codec<Credit>('referral credit', (r) => typeof r.code === 'string' && typeof r.owner === 'number' && typeof r.referred === 'number' && typeof r.at === 'string');
/** Reward entries kept per code (two per use); GET shows the newest 100. */
const REWARD_CAP = 10_000;
const SHOWN = 100;
const owners = codec<ReferralOwner>('referral owner', (r) => typeof r.code === 'string' && typeof r.uses === 'number');
const rewardEntries = codec<RewardEntry>('referral reward', (r) => typeof r.side === 'string');

export class ReferralService {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /** The customer's code; the first request writes the owner, every later one answers the same code. */
  async issue(input: { customerId: number; name: string; phone: string }): Promise<{ code: string; created: boolean }> {
    const code = referralCode(input.customerId);
    const key = K.owner(input.customerId);
    return this.deps.store.update<{ code: string; created: boolean }>([key], ([cur]) => {
      if (cur) return { writes: [], result: { code, created: false } };
      const owner: ReferralOwner = {
        code,
        customerId: input.customerId,
        name: input.name,
        phone: input.phone,
        uses: 0,
        createdAt: new Date(this.deps.clock.now()).toISOString(),
      };
      return { writes: [{ op: 'set', key, value: owners.encode(owner) }], result: { code, created: true } };
    });
  }

  private ownerId(code: string): number {
    const id = parseReferralCode(code);
    if (id === undefined) throw new AppError('invalid', 'invalid_referral_code', 'a referral code is MARU- followed by the customer id in base 36');
    return id;
  }

  /** 404 referral_not_found when no customer holds the code. */
  async info(code: string): Promise<ReferralInfo> {
    const id = this.ownerId(code);
    const o = owners.decode(await this.deps.store.get<Json>(K.owner(id)));
    if (!o) throw notFound('referral_not_found', `no customer holds the referral code ${code}`);
    const [older, newer] = await Promise.all([this.deps.store.range<Json>(K.oldRewards(id), -SHOWN, -1), this.deps.store.range<Json>(K.rewards(id), -SHOWN, -1)]);
    return {
      code: o.code,
      owner: { customerId: o.customerId, name: maskName(o.name), phone: maskPhone(o.phone) },
      uses: o.uses,
      rewards: decodeList(rewardEntries, [...older, ...newer]).slice(-SHOWN).reverse(),
      createdAt: o.createdAt,
    };
  }

  /** Whether the code names a customer (for a conversation that starts with it). */
  async exists(code: string): Promise<boolean> {
    return (await this.deps.store.get(K.owner(this.ownerId(code)))) !== undefined;
  }

  /**
   * A new customer's registration carried `code`: one reward to each side, once per referred
   * customer (a second redemption answers `redeemed: false`). 404 for an unknown code, 409
   * self_referral when the referred customer is the owner (same id or same phone).
   */
  async redeem(code: string, referred: { customerId: number; phone?: string }): Promise<{ redeemed: boolean }> {
    const id = this.ownerId(code);
    // the owner's id and phone are fixed when the code is issued: read before the claim
    const owner = owners.decode(await this.deps.store.get<Json>(K.owner(id)));
    if (!owner) throw notFound('referral_not_found', `no customer holds the referral code ${code}`);
    if (owner.customerId === referred.customerId || (referred.phone !== undefined && referred.phone === owner.phone)) {
      throw new AppError('conflict', 'self_referral', 'a customer cannot redeem their own referral code');
    }
    const redeemedKey = K.redeemed(referred.customerId);
    const now = this.deps.clock.now();
    const credit: Credit = { code: owner.code, owner: id, referred: referred.customerId, at: new Date(now).toISOString() };
    const claimed = await this.deps.store.update<boolean>([redeemedKey], ([done]) => {
      if (done) return { writes: [], result: false };
      return {
        writes: [
          { op: 'set', key: redeemedKey, value: { code: owner.code, at: credit.at } },
          ...outboxWrites({ id: `referral:${referred.customerId}`, dest: REFERRAL_DEST, payload: credits.encode(credit), createdAt: now }, redeemedKey),
        ],
        result: true,
      };
    });
    if (!claimed) return { redeemed: false };
    await this.credit(credit);
    return { redeemed: true };
  }

  /**
   * The owner's side of a claimed redemption: one use and one reward entry to each side, once per
   * referred customer (a second credit for the same one changes nothing).
   */
  async credit(c: Credit): Promise<{ credited: boolean }> {
    const ownerKey = K.owner(c.owner);
    const marker = K.credited(c.owner, c.referred);
    return this.deps.store.update<{ credited: boolean }>([ownerKey, marker], ([cur, done]) => {
      if (done !== undefined) return { writes: [], result: { credited: false } };
      const owner = owners.decode(cur);
      if (!owner) throw notFound('referral_not_found', `no customer holds the referral code ${c.code}`);
      const entry = (side: RewardEntry['side'], customerId: number): Json =>
        rewardEntries.encode({ code: owner.code, side, customerId, referredCustomerId: c.referred, at: c.at });
      return {
        writes: [
          { op: 'set', key: marker, value: c.at },
          { op: 'set', key: ownerKey, value: owners.encode({ ...owner, uses: owner.uses + 1 }) },
          { op: 'push', key: K.rewards(c.owner), value: entry('owner', owner.customerId), cap: REWARD_CAP },
          { op: 'push', key: K.rewards(c.owner), value: entry('referred', c.referred), cap: REWARD_CAP },
        ],
        result: { credited: true },
      };
    });
  }

  /** The outbox deliverer of REFERRAL_DEST: the owner's credit of a claimed redemption. */
  readonly deliver: Deliver = async (item) => {
    const c = credits.decode(item.payload);
    if (!c) throw new Error(`referral credit ${item.id} is not readable`);
    await this.credit(c);
  };

}
