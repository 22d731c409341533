import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { initialTransition, transition } from 'xstate';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { codec } from '../store/codec.js';
import { NEED_LABELS, SOURCE_LABELS, productFor } from './catalog.js';
import { classify } from './classify.js';
import { chatMachine, MACHINE_VERSION, type AnswerEvent, type ChatContext, type ChatEvent, type Progress, type StateName } from './machine.js';
import type { ReferralService } from './referral.js';
import { needText, view, type View } from './view.js';

/**
 * The guided conversation. A session is the machine's persisted state (state name + context) and
 * its version, kept in the Store with an idle TTL; a turn is XState's pure `transition` inside one
 * `store.update`, so turns on one session are applied one after another on any process sharing
 * the Store. Registration and mail are side effects the machine only records as owed (`pending`);
 * this service performs them through the functions it is given, under a per-session lease, and
 * feeds the result back as an event.
 */

/** What the conversation needs of the intake service (registration, tracking, counting). */
export interface ChatIntake {
  /**
   * Registers an intake record: `rental-ipa` (a rental application from the conversation, the same
   * record as the form's), `chat` (an application for another product) or `consult`
   * (a callback request) and returns its receipt number. `idempotencyKey` names the attempt: the
   * same key again answers the first record. `also` adds writes (the confirmation mail) to the same
   * atomic update that stores the record.
   */
  register(
    input: { type: 'chat' | 'consult' | 'rental-ipa'; contactName?: string; contactPhone: string; email?: string; remarks?: string; idempotencyKey: string },
    also?: (receiptNo: string) => Write[],
  ): Promise<{ receiptNo: string; accessKey?: string }>;
  /** The record's progress, or undefined when the receipt number is unknown. */
  track(receiptNo: string): Promise<Progress | undefined>;
  /** Every intake record ever registered (the shareholder view's cumulative receipts). */
  countReceipts(): Promise<number>;
  /** Notes the customer's upsell answer on the receipt's record (setting it again is harmless). */
  recordUpsell(receiptNo: string, upsell: { code: number; accepted: boolean }): Promise<void>;
}

/** What the conversation needs of the mail module: the writes that queue one mail (sent from the outbox). */
export interface ChatMail {
  writes(id: string, message: { to: string; subject: string; text: string }): Write[];
}

export interface ChatServiceDeps {
  store: Store;
  clock: Clock;
  intake: ChatIntake;
  mail: ChatMail;
  referrals: ReferralService;
  logger: Logger;
  /** Stored session lifetime after its last turn (ms). */
  sessionTtlMs: number;
  /** A turn after this much idle time (ms) starts the session again at greet. */
  idleRestartMs: number;
}

export const SESSION_ID_RE = /^cs_[A-Za-z0-9_-]{22}$/;
/** Longest free-text message (characters). */
export const MESSAGE_MAX = 500;

interface SessionRecord {
  v: number;
  state: StateName;
  ctx: ChatContext;
  /** Last turn (ms since epoch). */
  at: number;
}

const sessions = codec<SessionRecord>('chat session', (r) => typeof r.state === 'string' && typeof r.at === 'number');

export interface TurnAnswer extends Omit<View, 'choices'> {
  session: string;
  choices: string[];
  receiptNo?: string;
}

const K = {
  session: (id: string) => `chat:session:${id}`,
  effect: (id: string) => `chat:effect:${id}`,
  customers: 'chat:customer:seq',
};
/** How long one process may hold a session's side effect before another may take it over. */
const EFFECT_LEASE_MS = 30_000;
const WAIT_ROUNDS = 400;

type Restored = { state: StateName; ctx: ChatContext; restarted: boolean };

export class ChatService {
  private readonly id = randomBytes(6).toString('hex');

  constructor(private readonly deps: ChatServiceDeps) {}

  private initial(subject: string, referredBy?: string): Restored {
    const [snap] = initialTransition(chatMachine, { subject, ...(referredBy ? { referredBy } : {}) });
    return { state: snap.value as StateName, ctx: snap.context, restarted: false };
  }

  private record(r: { state: StateName; ctx: ChatContext }): Json {
    return sessions.encode({ v: MACHINE_VERSION, state: r.state, ctx: r.ctx, at: this.deps.clock.now() });
  }

  /** The stored record, unless it outlived its idle TTL on the hub clock (the store's TTL may lag it). */
  private live(raw: Json | undefined): SessionRecord {
    const rec = sessions.decode(raw);
    if (!rec || this.deps.clock.now() - rec.at > this.deps.sessionTtlMs) throw sessionNotFound();
    return rec;
  }

  /** A stored session; an old machine version or a long idle time starts again at greet. */
  private restore(raw: Json): Restored {
    const rec = this.live(raw);
    if (rec.v !== MACHINE_VERSION || this.deps.clock.now() - rec.at > this.deps.idleRestartMs) {
      return { ...this.initial(rec.ctx.subject, rec.ctx.referredBy), restarted: true };
    }
    return { state: rec.state, ctx: rec.ctx, restarted: false };
  }

  private answer(session: string, r: { state: StateName; ctx: ChatContext }, welcome = false): TurnAnswer {
    const v = view(r.state, r.ctx, welcome);
    return { session, ...v, choices: v.choices.map((c) => c.label), ...(r.ctx.receiptNo ? { receiptNo: r.ctx.receiptNo } : {}) };
  }

  async start(subject: string, referralCode?: string): Promise<TurnAnswer> {
    if (referralCode !== undefined && !(await this.deps.referrals.exists(referralCode))) {
      throw notFound('referral_not_found', `no customer holds the referral code ${referralCode}`);
    }
    const session = `cs_${randomBytes(16).toString('base64url')}`;
    const r = this.initial(subject, referralCode?.toUpperCase());
    await this.deps.store.set(K.session(session), this.record(r), { ttlMs: this.deps.sessionTtlMs });
    return this.answer(session, r);
  }

  /** The session as it stands (no turn). */
  async get(session: string): Promise<TurnAnswer> {
    return this.answer(session, this.live(await this.deps.store.get(K.session(session))));
  }

  async turn(session: string, input: { choice?: string; message?: string }): Promise<TurnAnswer> {
    const key = K.session(session);
    const fired = input.message !== undefined ? classify(input.message) : undefined;
    if (fired) {
      this.deps.logger.debug(
        { session, source: fired.source, need: fired.need, yes: fired.yes, handoff: fired.handoff },
        'chat keyword rule fired',
      );
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const b = this.live(await this.deps.store.get(key));
      if (b.ctx.pending) {
        await this.settle(session);
        continue;
      }
      // the receipt's progress is read before the atomic turn (the machine stays pure)
      const progress = b.ctx.receiptNo && (b.state === 'received' || b.state === 'track') ? await this.progress(b.ctx.receiptNo) : undefined;
      const out = await this.deps.store.update<{ owed: true } | (Restored & { owed: false; from?: StateName })>([key], ([cur]) => {
        const r = this.restore(cur!);
        if (r.restarted) return { writes: [{ op: 'set', key, value: this.record(r), ttlMs: this.deps.sessionTtlMs }], result: { ...r, owed: false } };
        if (r.ctx.pending) return { writes: [], result: { owed: true } };
        const offered = view(r.state, r.ctx).choices;
        let answer: Omit<AnswerEvent, 'type'>;
        if (input.choice !== undefined) {
          const picked = offered.find((c) => c.label === input.choice);
          if (!picked) {
            throw new AppError('invalid', 'choice_not_offered', `"${input.choice}" is not one of the offered choices`, {
              choices: offered.map((c) => c.label),
            });
          }
          answer = picked.answer;
        } else {
          const c = fired!;
          answer = {
            text: input.message,
            ...(c.source ? { source: c.source.value } : {}),
            ...(c.need ? { need: c.need.value } : {}),
            ...(c.yes !== undefined ? { yes: c.yes } : {}),
            ...(c.handoff ? { handoff: true } : {}),
            ...(c.edit ? { edit: c.edit.value } : {}),
            ...(c.change ? { change: true } : {}),
          };
        }
        const event: ChatEvent = { type: 'ANSWER', ...answer, ...(progress ? { progress } : {}) };
        const [next] = transition(chatMachine, chatMachine.resolveState({ value: r.state, context: r.ctx }), event);
        const n = { state: next.value as StateName, ctx: next.context };
        return {
          writes: [{ op: 'set', key, value: this.record(n), ttlMs: this.deps.sessionTtlMs }],
          result: { ...n, restarted: false, owed: false, from: r.state },
        };
      });
      if (out.owed) {
        await this.settle(session);
        continue;
      }
      if (out.restarted) return this.answer(session, out, true);
      const done = out.ctx.pending ? await this.settle(session) : out;
      if (out.from === 'upsell' && done.state === 'referral' && done.ctx.receiptNo && done.ctx.upsellCode !== undefined) {
        // upsell records acceptance on the receipt too; the session already holds it
        await this.deps.intake
          .recordUpsell(done.ctx.receiptNo, { code: done.ctx.upsellCode, accepted: done.ctx.upsellAccepted === true })
          .catch((err: unknown) => this.deps.logger.warn({ err, session }, 'chat: upsell not recorded on the receipt'));
      }
      if (done.state === 'sharing' && done.ctx.referral && done.ctx.customerId !== undefined) {
        await this.deps.referrals.issue({ customerId: done.ctx.customerId, name: done.ctx.name ?? '', phone: done.ctx.contact ?? '' });
      }
      return this.answer(session, done);
    }
    throw new AppError('unavailable', 'session_busy', 'the session is finishing a registration; try again');
  }

  private async progress(receiptNo: string): Promise<Progress | undefined> {
    try {
      return await this.deps.intake.track(receiptNo);
    } catch (err) {
      this.deps.logger.warn({ err, receiptNo }, 'chat: tracking failed');
      return undefined;
    }
  }

  /**
   * Performs the side effect a session owes (the receipt, or a callback request) under a lease, so
   * only one process registers it; others wait for the result.
   */
  private async settle(session: string): Promise<{ state: StateName; ctx: ChatContext }> {
    const { store } = this.deps;
    const key = K.session(session);
    const lease = K.effect(session);
    const me = `${this.id}:${randomBytes(4).toString('hex')}`;
    // another process holds the lease: wait for its result, at most WAIT_ROUNDS x 25 ms
    for (let round = 0; !(await store.set(lease, me, { ifAbsent: true, ttlMs: EFFECT_LEASE_MS })); round++) {
      const cur = sessions.decode(await store.get(key));
      if (!cur) throw sessionNotFound();
      if (!cur.ctx.pending) return cur;
      if (round >= WAIT_ROUNDS) throw new AppError('unavailable', 'session_busy', 'the session is finishing a registration; try again');
      await new Promise((r) => setTimeout(r, 25));
    }
    try {
      const cur = sessions.decode(await store.get(key));
      if (!cur) throw sessionNotFound();
      if (!cur.ctx.pending) return cur;
      const event = cur.ctx.pending === 'receipt' ? await this.registerReceipt(session, cur.ctx) : await this.registerCallback(session, cur.ctx);
      return await store.update([key], ([raw]) => {
        if (!raw) throw sessionNotFound();
        const rec = sessions.decode(raw)!;
        const [next] = transition(chatMachine, chatMachine.resolveState({ value: rec.state, context: rec.ctx }), event);
        const n = { state: next.value as StateName, ctx: next.context };
        return { writes: [{ op: 'set', key, value: this.record(n), ttlMs: this.deps.sessionTtlMs }], result: n };
      });
    } catch (err) {
      if (err instanceof AppError) throw err;
      this.deps.logger.warn({ err, session }, 'chat: intake registration failed');
      throw new AppError('unavailable', 'intake_unavailable', 'the receipt could not be registered yet; send the answer again');
    } finally {
      await store.update([lease], ([holder]) => ({ writes: holder === me ? [{ op: 'del', key: lease }] : [], result: null }));
    }
  }

  private async registerReceipt(session: string, ctx: ChatContext): Promise<ChatEvent> {
    const customerId = await this.deps.store.incr(K.customers);
    const product = productFor(ctx.category!);
    const own = needText(ctx);
    // as the summary the customer confirmed showed it
    const remarks = [
      `상담 경로: ${ctx.source ? SOURCE_LABELS[ctx.source] : '-'}`,
      `필요: ${NEED_LABELS[ctx.category!]}${own ? ` (${own})` : ''}`,
      `신청 상품: ${product.name}`,
      ctx.referredBy ? `추천 코드: ${ctx.referredBy}` : '',
      ctx.memo ? `요청 사항: ${ctx.memo}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    const email = ctx.email;
    const { receiptNo, accessKey } = await this.deps.intake.register(
      {
        type: ctx.category === 'rental' ? 'rental-ipa' : 'chat',
        contactName: ctx.name,
        contactPhone: ctx.contact!,
        ...(email ? { email } : {}),
        remarks,
        idempotencyKey: `chat:${session}:receipt`,
      },
      // the confirmation mail is queued in the same atomic write as the record
      (no) =>
        email
          ? this.deps.mail.writes(`chat:${no}:receipt`, {
              to: email,
              subject: `[maru] 상담 접수 ${no}`,
              text: `${ctx.name}님, 상담이 접수되었습니다.\n접수번호: ${no}\n신청 상품: ${product.name}\n담당자가 ${ctx.contact}(으)로 연락드리겠습니다.`,
            })
          : [],
    );
    if (ctx.referredBy) {
      try {
        await this.deps.referrals.redeem(ctx.referredBy, { customerId, phone: ctx.contact });
      } catch (err) {
        this.deps.logger.info({ err, session, code: ctx.referredBy }, 'chat: referral not redeemed');
      }
    }
    return { type: 'REGISTERED', receiptNo, customerId, ...(accessKey ? { accessKey } : {}) };
  }

  private async registerCallback(session: string, ctx: ChatContext): Promise<ChatEvent> {
    const { receiptNo } = await this.deps.intake.register({
      type: 'consult',
      ...(ctx.name ? { contactName: ctx.name } : {}),
      contactPhone: ctx.contact!,
      ...(ctx.email ? { email: ctx.email } : {}),
      remarks: `상담원 연결 요청 (대화 단계: ${ctx.returnTo ?? '-'}, 주제: ${ctx.subject})`,
      idempotencyKey: `chat:${session}:callback:${ctx.returnTo ?? ''}`,
    });
    return { type: 'CALLBACK_REGISTERED', receiptNo };
  }
}

const sessionNotFound = () =>
  notFound('session_not_found', 'unknown or expired conversation session; start a new one with POST /api/chat/start');
