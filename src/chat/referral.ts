import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { codec, decodeList } from '../store/codec.js';
import type { Json, Store } from '../store/port.js';
import { maskName, maskPhone } from './contact.js';
import { parseReferralCode, referralCode } from './referral-code.js';

/**
 * Referrals: a customer's code (see referral-code.ts), its owner, its uses and the rewards it
 * granted. A redemption (a new customer's registration carrying the code) gives one reward entry to
 * each side, once per referred customer; nobody redeems their own code.
 */

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
  rewards: (id: number) => `referral:rewards:${id}`,
};
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
    const rewards = await this.deps.store.range<Json>(K.rewards(id), -SHOWN, -1);
    return {
      code: o.code,
      owner: { customerId: o.customerId, name: maskName(o.name), phone: maskPhone(o.phone) },
      uses: o.uses,
      rewards: decodeList(rewardEntries, rewards).reverse(),
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
    const ownerKey = K.owner(id);
    const redeemedKey = K.redeemed(referred.customerId);
    return this.deps.store.update<{ redeemed: boolean }>([ownerKey, redeemedKey], ([cur, done]) => {
      if (!cur) throw notFound('referral_not_found', `no customer holds the referral code ${code}`);
      const owner = owners.decode(cur)!;
      if (owner.customerId === referred.customerId || (referred.phone !== undefined && referred.phone === owner.phone)) {
        throw new AppError('conflict', 'self_referral', 'a customer cannot redeem their own referral code');
      }
      if (done) return { writes: [], result: { redeemed: false } };
      const at = new Date(this.deps.clock.now()).toISOString();
      const entry = (side: RewardEntry['side'], customerId: number): Json =>
        rewardEntries.encode({ code: owner.code, side, customerId, referredCustomerId: referred.customerId, at });
      return {
        writes: [
          { op: 'set', key: redeemedKey, value: { code: owner.code, at } },
          { op: 'set', key: ownerKey, value: owners.encode({ ...owner, uses: owner.uses + 1 }) },
          { op: 'push', key: K.rewards(id), value: entry('owner', owner.customerId), cap: REWARD_CAP },
          { op: 'push', key: K.rewards(id), value: entry('referred', referred.customerId), cap: REWARD_CAP },
        ],
        result: { redeemed: true },
      };
    });
  }
}
