import { randomUUID } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { outboxWrites } from '../outbox.js';
import { codec, F, optional } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';
import type { ProgramSpec } from '../trading/index.js';
import { Idempotency, type IdemTicket, type StoredAnswer } from '../idempotency.js';
import { K, collateralAccount, ledgerOp, ledgerUpdate, parseTransfer, readAccount, availableOf, balanceOf, transferJson, transferKeys, userAccount, type TransferInput } from './ledger.js';
import type { LedgerOp } from './ledger-batch.js';
import { registerLedgerCommands } from './ledger-commands.js';
import { ledgerWriter, type LedgerWriter } from './ledger-writer.js';
import type { PegService, PegSnapshot } from './peg.js';
import { BANKING_DEST, BROKER_DEST, type ChainLink } from './peers.js';
import { LEDGER_NEAR, RK, chainEventWrites, receiptWrites } from './receipts.js';
import { CHALLENGES, challengeKind, offrampFee, usdMicroToUnits, type ChallengeStats } from './rules.js';

/**
 * The payment relay (document 2): wallets, challenge purchases, on-ramp and off-ramp at the banking
 * boundary, receipts. Payouts and the challenge lifecycle are in payouts.ts and lifecycle.ts.
 * Every state change is one store.update holding the ledger transfers, the receipt, the outbox items
 * and the Idempotency-Key answer.
 */

export const PK = {
  challenge: (id: string) => `pay:chal:${id}`,
  userKind: (user: string, kind: string) => `pay:uchal:${user}:${kind}`,
  userChallenges: (user: string) => `pay:uchals:${user}`,
  onramp: (id: string) => `pay:onramp:${id}`,
  bankPayment: (id: string) => `pay:bankpay:${id}`,
  /** On-ramps not yet credited or declined, scored by when the bank is next asked their status. */
  onrampsOpen: 'pay:onramps:open',
  funded: 'pay:funded',
  audit: 'pay:audit',
};

export const CHALLENGE_STATES = ['active', 'failed', 'passed', 'funded', 'withdrawn'] as const;
export type ChallengeState = (typeof CHALLENGE_STATES)[number];

export interface ChallengeRecord {
  id: string;
  kind: string;
  user: string;
  state: ChallengeState;
  account_size: number;
  entry_fee: string;
  peg: PegSnapshot;
  broker_account: string;
  receipt_hash: string;
  started_at: number;
  stats: ChallengeStats;
  violations: { rule: string; ts: number }[];
  /** The collateral posted at scale-up (deductions are taken from its sub-account, not from this figure). */
  collateral: string;
  /** What the withdrawal refunded. */
  refunded?: string;
  program?: string;
  judged?: { outcome: string; by: string; reason: string; ts: number };
}

/** Stored challenges (every module of the relay reads and writes them through this codec). */
const pegSnapshots = codec<PegSnapshot & { challenge: string }>('peg snapshot');
export const challengeRecords = codec<ChallengeRecord>('challenge', (r) => typeof r.id === 'string' && typeof r.state === 'string');

/** An on-ramp: opened with its KRW amount and peg, then credited once (or declined by the bank). */
export interface OnrampRecord {
  id: string;
  user: string;
  amount_krw: number;
  method: string;
  peg_ppm: string;
  created_at: number;
  state: 'open' | 'credited' | 'declined';
  payment_id?: string;
  units?: string;
}
export const onrampRecords = codec<OnrampRecord>('on-ramp', {
  fields: { id: F.str, user: F.str, amount_krw: F.int, method: F.str, peg_ppm: F.str, created_at: F.num, state: (v) => v === 'open' || v === 'credited' || v === 'declined', payment_id: optional(F.str), units: optional(F.str) },
});
/** A banking payment credited: the on-ramp it settled and its receipt. */
const bankPayments = codec<{ ref: string; receipt_hash: string }>('banking payment', { fields: { ref: F.str, receipt_hash: F.str } });

/** Starts the challenge's live trading program (bound in src/app.ts); may be absent. */
/**
 * The live program a bought challenge runs (challenge-programs.ts): planned as writes for the
 * purchase's own atomic update, started once it is committed.
 */
export interface ChallengeProgramPort {
  plan(challenge: string, accountSize: number, now: number): { program: string; spec: ProgramSpec; writes: Write[] };
  ensure(program: string, spec: ProgramSpec): Promise<void>;
}

export interface PaymentServiceOptions {
  store: Store;
  clock: Clock;
  bus?: Pick<Bus, 'publish'>;
  peg: PegService;
  idempotency: Idempotency;
  bankingUrl?: string;
  onKick?: () => void;
  /** A bought challenge's program did not start (it stays created, for an operator to start). */
  onProgramStartFailed?: (err: unknown, program: string) => void;
  maxOnrampKrw: number;
}

export interface Effect {
  ticket?: IdemTicket;
}

const unitsBig = (s: string) => BigInt(s);

/** A purchase as the ledger writer applies it (JSON: it may be handed to another process). */
interface BuyArgs {
  user: string;
  kind: string;
  id: string;
  peg: PegSnapshot;
  broker_account: string;
  now: number;
  planned?: { program: string; spec: ProgramSpec; writes: Write[] };
  ticket?: IdemTicket;
}

export class PaymentService {
  /** The ledger's writer for this store (one per store: batches, and one writer across processes). */
  readonly ledger: LedgerWriter;

  /**
   * The store stays inside: the relay's other parts (lifecycle, payouts, corrections, reconciler,
   * books) are handed it by whoever builds them (relay.ts), never by this service.
   */
  constructor(private readonly opts: PaymentServiceOptions) {
    this.ledger = ledgerWriter(opts.store);
    registerLedgerCommands(this.ledger);
    this.ledger.register('payment.buy', (a) => this.buyOp(a as unknown as BuyArgs));
  }

  private get store() {
    return this.opts.store;
  }
  now() {
    return this.opts.clock.now();
  }

  /** The same service (store, peg, idempotency, bus) whose clock is `clock`: a past instant's steps (the demo's story). */
  withClock(clock: Clock): PaymentService {
    return new PaymentService({ ...this.opts, clock });
  }

  /** Asks the outbox to deliver now, after an update enqueued an effect to a peer. */
  kick(): void {
    this.opts.onKick?.();
  }

  /** The writes that finish an Idempotency-Key's answer inside the effect's own update (none without a key). */
  finishWrites(e: Effect, answer: StoredAnswer): Write[] {
    return this.idemFinish(e, answer);
  }

  /** A warning for the operators on `payment:warnings` (best effort: the state it tells of is committed). */
  async warn(message: Json): Promise<void> {
    await this.opts.bus?.publish('payment:warnings', message).catch(() => undefined);
  }

  challenges() {
    return { challenges: CHALLENGES };
  }

  /** The finished answer for an Idempotency-Key plus the ledger effect, or a replay found inside the update. */
  private idemKeys(e: Effect): string[] {
    return e.ticket ? [e.ticket.storeKey] : [];
  }
  private idemFinish(e: Effect, answer: StoredAnswer): Write[] {
    return e.ticket ? this.opts.idempotency.finishWrites(e.ticket, answer) : [];
  }

  async wallet(user: string, page: { limit: number; offset: number }) {
    // the wallet, the learning credit, and the collateral: the user's older single account and each
    // of the user's challenges' sub-accounts of the collateral pool (the latest 100 challenges)
    const mine = (await this.store.indexRange(PK.userChallenges(user), { reverse: true, limit: 100 })).map((e) => collateralAccount(e.member));
    const [w, c, ...cols] = await Promise.all([userAccount(user, 'wallet'), userAccount(user, 'credit'), userAccount(user, 'collateral'), ...mine].map((id) => readAccount(this.store, id)));
    const all = [w!, c!, ...cols];
    const ids = new Map<string, number>();
    // history: transfers of these accounts, newest first
    const lists = await Promise.all(all.map((a) => this.store.indexRange(K.history(a.id), { reverse: true, limit: page.offset + page.limit })));
    for (const e of lists.flat()) ids.set(e.member, e.score);
    const total = (await Promise.all(all.map((a) => this.store.indexCount(K.history(a.id))))).reduce((x, y) => x + y, 0);
    const chosen = [...ids.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : -1)).slice(page.offset, page.offset + page.limit);
    const recs = await this.store.getMany(chosen.map(([id]) => K.transfer(id)));
    return {
      balance: availableOf(w!).toString(),
      learning_credit: availableOf(c!).toString(),
      collateral: cols.reduce((sum, a) => sum + balanceOf(a), 0n).toString(),
      decimals: 6,
      history: recs.map((r) => parseTransfer(r)).filter((t) => t !== undefined).map((t) => transferJson(t!)),
      page: { offset: page.offset, limit: page.limit, total },
    };
  }

  // ---- challenge purchase -----------------------------------------------------------------------

  async buy(user: string, kindId: string, e: Effect, program?: ChallengeProgramPort) {
    const kind = challengeKind(kindId);
    if (!kind) throw new AppError('not_found', 'unknown_challenge', `no challenge kind ${kindId}`, { known: CHALLENGES.map((c) => c.challenge_id) });
    const fee = unitsBig(kind.entry_fee);
    const credit = userAccount(user, 'credit');
    const wallet = userAccount(user, 'wallet');
    // a cheap early refusal (checked again atomically below) before asking the price providers
    const [cA, wA] = await Promise.all([readAccount(this.store, credit), readAccount(this.store, wallet)]);
    if (availableOf(cA) + availableOf(wA) < fee) throw insufficient(fee - availableOf(cA) - availableOf(wA));
    const peg = await this.opts.peg.snapshot(this.now()); // 503 before anything moves
    const id = `c_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    // the challenge's program is named in the purchase's own update, created and started after it
    const planned = program ? program.plan(id, kind.account_size, this.now()) : undefined;
    const broker_account = `BA-${id.slice(2, 14).toUpperCase()}`;
    const args: BuyArgs = { user, kind: kind.challenge_id, id, peg, broker_account, now: this.now(), ...(planned ? { planned } : {}), ...(e.ticket ? { ticket: e.ticket } : {}) };
    const rec = (await this.ledger.exec('payment.buy', args as unknown as Json)) as unknown as { replay: StoredAnswer } | { body: Json; record: ChallengeRecord };
    this.opts.onKick?.();
    if ('replay' in rec) return rec.replay.body;
    if (planned) {
      // the challenge stands committed, its program's creation in the outbox: made here at once; one
      // that fails is made by the outbox's delivery, retried (docs/payment.md)
      await program!.ensure(planned.program, planned.spec).catch((err: unknown) => this.opts.onProgramStartFailed?.(err, planned.program));
    }
    return rec.body;
  }

  /**
   * What buying a challenge of `kindId` would charge the user now (GET /api/token/challenge/quote):
   * the purchase's own split (purchaseCharge), the balances it reads and the peg a purchase now would
   * fix. Read-only; the same refusals as the purchase for an unknown kind or a running challenge.
   */
  async quote(user: string, kindId: string) {
    const kind = challengeKind(kindId);
    if (!kind) throw new AppError('not_found', 'unknown_challenge', `no challenge kind ${kindId}`, { known: CHALLENGES.map((c) => c.challenge_id) });
    const [cA, wA, current] = await Promise.all([
      readAccount(this.store, userAccount(user, 'credit')),
      readAccount(this.store, userAccount(user, 'wallet')),
      this.store.get(PK.userKind(user, kind.challenge_id)) as Promise<{ id: string; state: string } | undefined>,
    ]);
    if (current && current.state === 'active') throw new AppError('conflict', 'challenge_active', `a ${kind.challenge_id} challenge is already running`, { challenge: current.id });
    const c = purchaseCharge(unitsBig(kind.entry_fee), availableOf(cA));
    const peg = await this.opts.peg.snapshot(this.now());
    const wallet = availableOf(wA);
    return {
      challenge_id: kind.challenge_id,
      name: kind.name,
      account_size: kind.account_size,
      amount: c.amount.toString(),
      fee: c.fee.toString(),
      total: c.total.toString(),
      from_credit: c.fromCredit.toString(),
      from_wallet: c.fromWallet.toString(),
      wallet_balance: wallet.toString(),
      wallet_after: (wallet - c.fromWallet).toString(),
      sufficient: wallet >= c.fromWallet,
      peg_rate: peg.peg_rate,
      snapshot_ts: peg.snapshot_ts,
      decimals: 6,
    };
  }

  /** The purchase's ledger step: the fee (learning credit first, then the wallet, linked), its receipt, the challenge. */
  private buyOp(a: BuyArgs): LedgerOp<Json> {
    const { user, id, peg, broker_account, now, planned } = a;
    const kind = challengeKind(a.kind);
    if (!kind) throw new AppError('not_found', 'unknown_challenge', `no challenge kind ${a.kind}`);
    const fee = unitsBig(kind.entry_fee);
    const credit = userAccount(user, 'credit');
    const wallet = userAccount(user, 'wallet');
    const e: Effect = a.ticket ? { ticket: a.ticket } : {};
    const xfer = (n: string) => `buy:${id}:${n}`;
    const keys = [
      ...transferKeys([{ id: xfer('credit'), debit: credit, credit: 'escrow', amount: 1n, code: '' }, { id: xfer('wallet'), debit: wallet, credit: 'escrow', amount: 1n, code: '' }]),
      PK.userKind(user, kind.challenge_id),
      RK.head,
      ...this.idemKeys(e),
    ];
    return ledgerOp<Json>(() => now, keys, (tx, get) => {
      const replay = e.ticket && Idempotency.done(get(e.ticket.storeKey));
      if (replay) return { result: { replay } as unknown as Json };
      const current = get(PK.userKind(user, kind.challenge_id)) as { id: string; state: string } | undefined;
      if (current && current.state === 'active') throw new AppError('conflict', 'challenge_active', `a ${kind.challenge_id} challenge is already running`, { challenge: current.id });
      // learning credit first (it can only buy challenges), then the wallet: two linked transfers
      const { fromCredit, fromWallet } = purchaseCharge(fee, availableOf(tx.account(credit)));
      if (availableOf(tx.account(wallet)) < fromWallet) throw insufficient(fromWallet - availableOf(tx.account(wallet)));
      const ids: string[] = [];
      if (fromCredit > 0n) ids.push(tx.transfer({ id: xfer('credit'), debit: credit, credit: 'escrow', amount: fromCredit, code: 'challenge_fee' }).id);
      if (fromWallet > 0n) ids.push(tx.transfer({ id: xfer('wallet'), debit: wallet, credit: 'escrow', amount: fromWallet, code: 'challenge_fee' }).id);
      const r = receiptWrites(get(RK.head), { kind: 'challenge_purchase', user, amount: fee.toString(), transfers: ids, ref: id, ts: now });
      const record: ChallengeRecord = {
        id, kind: kind.challenge_id, user, state: 'active', account_size: kind.account_size, entry_fee: kind.entry_fee, peg,
        broker_account, receipt_hash: r.hash, started_at: now, stats: { realized_cents: 0, peak_cents: 0, day: '', day_cents: 0 },
        violations: [], collateral: '0', ...(planned ? { program: planned.program } : {}),
      };
      const body = { ok: true, receipt_hash: r.hash, broker_account, challenge: id };
      const writes: Write[] = [
        ...r.writes,
        { op: 'set', key: PK.challenge(id), value: challengeRecords.encode(record) },
        { op: 'set', key: PK.userKind(user, kind.challenge_id), value: { id, state: 'active' } },
        { op: 'index', key: PK.userChallenges(user), member: id, score: now },
        ...chainEventWrites(`purchase:${id}`, 'challenge_purchase', { challenge: id, kind: kind.challenge_id, user, fee: kind.entry_fee }, now),
        ...chainEventWrites(`start:${id}`, 'challenge_start', { challenge: id, account_size: kind.account_size, started_at: now }, now),
        ...chainEventWrites(`peg:${id}`, 'peg_snapshot', pegSnapshots.encode({ challenge: id, ...peg }), now),
        ...(planned ? [...planned.writes, ...chainEventWrites(`program:${planned.program}`, 'program_creation', { program: planned.program, challenge: id, ts: now }, now)] : []),
        ...outboxWrites({ id: `broker:${broker_account}`, dest: BROKER_DEST, payload: { account_id: broker_account, user, account_size: kind.account_size, challenge: id }, createdAt: now }, LEDGER_NEAR),
        ...this.idemFinish(e, { status: 200, body }),
      ];
      return { writes, result: { body, record } as unknown as Json };
    });
  }

  async challenge(id: string): Promise<ChallengeRecord> {
    const rec = challengeRecords.decode(await this.store.get(PK.challenge(id)));
    if (!rec) throw new AppError('not_found', 'challenge_not_found', `no challenge ${id}`);
    return rec;
  }

  /** The peg of the caller's latest challenge of a kind (or of a purchased challenge id). */
  async peg(user: string, challengeId: string) {
    let id = challengeId;
    if (challengeKind(challengeId)) {
      const cur = (await this.store.get(PK.userKind(user, challengeId))) as { id: string } | undefined;
      if (!cur) throw new AppError('not_found', 'challenge_not_found', `you have not bought a ${challengeId} challenge`);
      id = cur.id;
    }
    const rec = await this.challenge(id);
    if (rec.user !== user) throw new AppError('not_found', 'challenge_not_found', `no challenge ${id}`);
    return { peg_rate: rec.peg.peg_rate, snapshot_ts: rec.peg.snapshot_ts, challenge: rec.id, window_ms: rec.peg.window_ms, inputs: rec.peg.inputs };
  }

  async myChallenges(user: string) {
    const ids = await this.store.indexRange(PK.userChallenges(user), { reverse: true, limit: 100 });
    const recs = await this.store.getMany(ids.map((e) => PK.challenge(e.member)));
    return { challenges: recs.filter(Boolean) };
  }

  // ---- on-ramp / off-ramp ------------------------------------------------------------------------

  /** Creates an on-ramp payment and returns the banking page's address; the webhook credits it. */
  async onramp(user: string, amountKrw: number, method: 'card' | 'transfer', notifyBase: string, returnUrl: string, e: Effect) {
    if (!this.opts.bankingUrl) throw new AppError('unavailable', 'banking_not_configured', 'BANKING_URL is not configured');
    if (!Number.isSafeInteger(amountKrw) || amountKrw <= 0 || amountKrw > this.opts.maxOnrampKrw) {
      throw new AppError('invalid', 'invalid_amount', `amount_krw must be a positive integer of at most ${this.opts.maxOnrampKrw}`);
    }
    const peg = await this.opts.peg.snapshot(this.now());
    const id = `or_${randomUUID().replace(/-/g, '')}`;
    const q = new URLSearchParams({ ref: id, amount_krw: String(amountKrw), method, user, notify: `${notifyBase}/api/token/banking/webhook`, return: returnUrl });
    const location = `${this.opts.bankingUrl.replace(/\/+$/, '')}/pay?${q}`;
    const now = this.now();
    return this.store.update([PK.onramp(id), ...this.idemKeys(e)], ([, idem]) => {
      const replay = Idempotency.done(idem);
      if (replay) return { writes: [], result: replay };
      const answer: StoredAnswer = { status: 303, body: { payment: id, location, peg_rate: peg.peg_rate }, headers: { location } };
      return {
        writes: [
          { op: 'set', key: PK.onramp(id), value: onrampRecords.encode({ id, user, amount_krw: amountKrw, method, peg_ppm: peg.peg_ppm, created_at: now, state: 'open' }) },
          { op: 'index', key: PK.onrampsOpen, member: id, score: now },
          ...this.idemFinish(e, answer),
        ],
        result: answer,
      };
    });
  }

  /** The banking service's signed confirmation: credits once per banking payment id. */
  async confirmOnramp(data: { payment_id: string; ref: string; amount_krw: number; usd_micro: number }) {
    const or = onrampRecords.decode(await this.store.get(PK.onramp(data.ref)));
    if (!or) throw new AppError('not_found', 'onramp_not_found', `no on-ramp ${data.ref}`);
    if (or.amount_krw !== data.amount_krw) throw new AppError('conflict', 'amount_mismatch', 'the confirmed amount differs from the on-ramp');
    const units = usdMicroToUnits(BigInt(data.usd_micro), BigInt(or.peg_ppm));
    if (units <= 0n) throw new AppError('invalid', 'invalid_amount', 'the payment converts to zero tokens');
    const wallet = userAccount(or.user, 'wallet');
    const t: TransferInput = { id: `onramp:${data.payment_id}`, debit: 'bank', credit: wallet, amount: units, code: 'onramp', meta: { ref: or.id, amount_krw: or.amount_krw } };
    const now = this.now();
    const out = await ledgerUpdate(this.store, () => now, [...transferKeys([t]), PK.bankPayment(data.payment_id), PK.onramp(or.id), RK.head], (tx, get) => {
      const seen = bankPayments.decode(get(PK.bankPayment(data.payment_id)));
      if (seen) return { result: { credited: false, receipt_hash: seen.receipt_hash, amount: units.toString() } };
      const onr = onrampRecords.decode(get(PK.onramp(or.id)))!;
      if (onr.state !== 'open') throw new AppError('conflict', 'onramp_settled', onr.state === 'declined'
        ? `on-ramp ${or.id} was declined by the bank; it takes no payment`
        : `on-ramp ${or.id} was already credited by payment ${onr.payment_id ?? 'unknown'}`, { state: onr.state });
      tx.transfer(t);
      const r = receiptWrites(get(RK.head), { kind: 'onramp', user: or.user, amount: units.toString(), transfers: [t.id], ref: data.payment_id, ts: now });
      return {
        writes: [
          ...r.writes,
          { op: 'set', key: PK.bankPayment(data.payment_id), value: bankPayments.encode({ ref: or.id, receipt_hash: r.hash }) },
          { op: 'set', key: PK.onramp(or.id), value: onrampRecords.encode({ ...onr, state: 'credited', payment_id: data.payment_id, units: units.toString() }) },
          { op: 'unindex', key: PK.onrampsOpen, member: or.id },
        ],
        result: { credited: true, receipt_hash: r.hash, amount: units.toString() },
      };
    });
    this.opts.onKick?.();
    return out;
  }

  /** Token -> KRW through the banking service, 1.4 % to it; the bank is told through the outbox. */
  async offramp(user: string, amount: bigint, e: Effect) {
    const fee = offrampFee(amount);
    const id = `off_${randomUUID().replace(/-/g, '')}`;
    const wallet = userAccount(user, 'wallet');
    const main: TransferInput = { id: `${id}:net`, debit: wallet, credit: 'bank', amount: amount - fee, code: 'offramp' };
    const feeT: TransferInput = { id: `${id}:fee`, debit: wallet, credit: 'bank', amount: fee, code: 'offramp_fee' };
    if (amount - fee <= 0n) throw new AppError('invalid', 'invalid_amount', 'the amount does not cover the off-ramp fee');
    const now = this.now();
    const out = await ledgerUpdate(this.store, () => now, [...transferKeys([main, feeT]), RK.head, ...this.idemKeys(e)], (tx, get) => {
      const replay = e.ticket && Idempotency.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body };
      if (availableOf(tx.account(wallet)) < amount) throw insufficient(amount - availableOf(tx.account(wallet)));
      tx.transfer(main);
      tx.transfer(feeT);
      const r = receiptWrites(get(RK.head), { kind: 'offramp', user, amount: amount.toString(), transfers: [main.id, feeT.id], ref: id, ts: now });
      const body = { ok: true, offramp: id, amount: amount.toString(), fee: fee.toString(), net: (amount - fee).toString(), receipt_hash: r.hash };
      return {
        writes: [
          ...r.writes,
          ...outboxWrites({ id: `offramp:${id}`, dest: BANKING_DEST, payload: { user, tokens: (amount - fee).toString(), fee: fee.toString(), receipt_hash: r.hash }, createdAt: now }, LEDGER_NEAR),
          ...this.idemFinish(e, { status: 200, body }),
        ],
        result: body as Json,
      };
    });
    this.opts.onKick?.();
    return out;
  }

  /** Operators fund the payout pool (escrow) from the banking boundary. */
  async fundPool(amount: bigint, by: string, e: Effect) {
    const id = `fund_${randomUUID().replace(/-/g, '')}`;
    const t: TransferInput = { id, debit: 'bank', credit: 'escrow', amount, code: 'pool_funding', meta: { by } };
    const now = this.now();
    return ledgerUpdate(this.store, () => now, [...transferKeys([t]), RK.head, ...this.idemKeys(e)], (tx, get) => {
      const replay = e.ticket && Idempotency.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body };
      tx.transfer(t);
      const r = receiptWrites(get(RK.head), { kind: 'pool_funding', user: null, amount: amount.toString(), transfers: [id], ref: id, ts: now });
      const body = { ok: true, transfer: id, receipt_hash: r.hash };
      return { writes: [...r.writes, ...this.idemFinish(e, { status: 200, body }), auditWrite({ action: 'fund_pool', by, amount: amount.toString(), ts: now })], result: body as Json };
    });
  }

  // ---- receipts ----------------------------------------------------------------------------------

  async onChainRecorded(chainId: string, link: ChainLink) {
    await this.store.set(RK.link(chainId), { tx_id: link.tx_id, leaf_index: link.leaf_index, tree_size: link.tree_size });
  }

  /** One receipt of `user` (another user's reads as absent) with its chain link. */
  async receipt(hash: string, user: string) {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new AppError('invalid', 'invalid_hash', 'a receipt hash is 64 lower-case hex digits');
    const [r, link] = await this.store.getMany([RK.receipt(hash), RK.link(`receipt:${hash}`)]);
    if (!r || (r as { user?: string }).user !== user) throw new AppError('not_found', 'receipt_not_found', `no receipt ${hash}`);
    return { receipt_hash: hash, receipt: r, chain: link ?? null };
  }

  /** The user's receipts, newest first. */
  async receipts(user: string, page: { limit: number; offset: number }) {
    const [ids, total] = await Promise.all([
      this.store.indexRange(RK.user(user), { reverse: true, offset: page.offset, limit: page.limit }),
      this.store.indexCount(RK.user(user)),
    ]);
    const recs = await this.store.getMany(ids.map((e) => RK.receipt(e.member)));
    return { receipts: ids.map((e, i) => ({ receipt_hash: e.member, ...(recs[i] as object) })), page: { ...page, total } };
  }
}

/** The purchase fee (document 2, Limits: "Fee: challenge purchase 0 percent"). */
export const PURCHASE_FEE = 0n;

/**
 * What a challenge purchase charges, for the purchase and its quote alike: the entry fee plus the
 * purchase fee, taken from the learning credit first (up to what it holds), the rest from the wallet.
 */
export function purchaseCharge(entryFee: bigint, creditAvailable: bigint) {
  const amount = entryFee;
  const fee = PURCHASE_FEE;
  const total = amount + fee;
  const fromCredit = creditAvailable < total ? (creditAvailable > 0n ? creditAvailable : 0n) : total;
  return { amount, fee, total, fromCredit, fromWallet: total - fromCredit };
}

export const insufficient = (shortfall: bigint) =>
  new AppError('conflict', 'insufficient_balance', `the balance is ${shortfall} minor units short; top up through POST /api/token/onramp`, {
    shortfall: shortfall.toString(),
    onramp: '/api/token/onramp',
  });

export const auditWrite = (entry: Record<string, Json>): Write => ({ op: 'push', key: PK.audit, value: entry, cap: 10_000 });
