import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { initialTransition, transition } from 'xstate';
import type { Clock } from '../clock.js';
import { AppError, conflict, notFound } from '../errors.js';
import { across, mergedIndexRange, newestAcross, partitionKeyFor, partitionKeys, type Json, type Store, type Write } from '../store/port.js';
import { codec, decodeList } from '../store/codec.js';
import { NEED_LABELS, SOURCE_LABELS, productFor } from './catalog.js';
import { classify } from './classify.js';
import {
  FUNNEL_STAGES,
  HOLD_IDLE_MS,
  inHandoff,
  RECENT_MAX,
  stageBit,
  TRANSCRIPT_MAX,
  weekOf,
  type Agent,
  type DeskState,
  type Line,
} from './desk.js';
import { chatMachine, MACHINE_VERSION, stageCode, wireStage, type AnswerEvent, type ChatContext, type ChatEvent, type Progress, type StateName } from './machine.js';
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
   * atomic update that stores the record; `near` is a key of that update (the outbox's `near`).
   */
  register(
    input: { type: 'chat' | 'consult' | 'rental-ipa'; contactName?: string; contactPhone: string; email?: string; remarks?: string; idempotencyKey: string },
    also?: (receiptNo: string, near: string) => Write[],
  ): Promise<{ receiptNo: string; accessKey?: string }>;
  /** The record's progress, or undefined when the receipt number is unknown. */
  track(receiptNo: string): Promise<Progress | undefined>;
  /** Every intake record ever registered (the shareholder view's cumulative receipts). */
  countReceipts(): Promise<number>;
  /** Notes the customer's upsell answer on the receipt's record (setting it again is harmless). */
  recordUpsell(receiptNo: string, upsell: { code: number; accepted: boolean }): Promise<void>;
}

/** What the conversation needs of the mail module: the writes that queue one mail (sent from the outbox) in the partition of `near`, a key of the same update. */
export interface ChatMail {
  writes(id: string, message: { to: string; subject: string; text: string }, near?: string): Write[];
}

export interface ChatServiceDeps {
  store: Store;
  clock: Clock;
  intake: ChatIntake;
  mail: ChatMail;
  referrals: ReferralService;
  logger: Logger;
  /** Live messages: the conversation's topic (`chat:<session>`) and the desk's (`desk`). */
  bus?: { emit(topic: string, message: Json): void };
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
  /** A person's desk: waiting for one, or held by one (docs/chat.md, "The desk"). */
  desk?: DeskState;
  /** The stage codes the session has reached (bit 1 << code), counted once each in the funnel. */
  reached?: number;
  /** The week the session started (its funnel cohort, `2026-W48`). */
  week?: string;
}

const sessions = codec<SessionRecord>('chat session', (r) => typeof r.state === 'string' && typeof r.at === 'number');

export interface TurnAnswer extends Omit<View, 'choices'> {
  session: string;
  choices: string[];
  receiptNo?: string;
  /** A person's desk: waiting for one, or one answering (by name). */
  desk?: { status: 'waiting' } | { status: 'answering'; agent: string };
}

/** A transcript line on the wire. */
export interface LineView {
  at: string;
  by: Line['by'];
  text: string;
  agent?: string;
  stageCode: number;
}

/** A conversation as the desk lists it. */
export interface DeskEntry {
  session: string;
  status: 'waiting' | 'held' | 'none';
  reason?: DeskState['reason'];
  since?: string;
  agent?: Agent;
  /** Where the conversation stands (handoff while it is with the desk) and where it returns to. */
  stage: string;
  stageCode: number;
  returnTo?: string;
  subject: string;
  name?: string;
  at: string;
}

export const TOPIC = {
  session: (id: string) => `chat:${id}`,
  desk: 'desk',
};

const K = {
  session: (id: string) => `chat:session:${id}`,
  transcript: (id: string) => `chat:session:${id}:transcript`,
  effect: (id: string) => `chat:effect:${id}`,
  customers: 'chat:customer:seq',
  // The lists and counters across sessions are one key per partition (`chat:desk:{#p}`...),
  // written in the session's own update and merged on read with these global keys of before.
  /** Conversations waiting for a person or held by one (score: since when). */
  desk: 'chat:desk',
  /** The last RECENT_MAX sessions started (per partition: `{session, at}`; the global list of before: ids). */
  recent: 'chat:desk:recent',
  /** Sessions of a week's cohort that reached a stage (per partition: the total is the sum). */
  funnel: (week: string, code: number) => `chat:funnel:${week}:${code}`,
};
/** `name` in the partition of the session's record. */
const near = (session: string, name: string) => partitionKeyFor(name, K.session(session));
const recentEntries = codec<{ session: string; at: number }>('chat recent entry', (r) => typeof r.session === 'string' && typeof r.at === 'number');
const lines = (raw: Json | undefined): Line[] => (Array.isArray(raw) ? (raw as unknown as Line[]) : []);
const iso = (ms: number) => new Date(ms).toISOString();

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

  /**
   * The writes of a session moving to `n`: the record (with its desk, the stages it reached and
   * its week), the funnel count of a stage reached for the first time, the transcript with `add`
   * (bounded to TRANSCRIPT_MAX lines, the same TTL as the session) and the desk index.
   */
  private commit(session: string, prev: SessionRecord | undefined, n: { state: StateName; ctx: ChatContext }, desk: DeskState | undefined, log: Line[], add: Line[]): Write[] {
    const now = this.deps.clock.now();
    const ttlMs = this.deps.sessionTtlMs;
    const week = prev?.week ?? weekOf(now).week;
    let reached = prev?.reached ?? 0;
    const writes: Write[] = [];
    const code = stageCode(n.state);
    if (code > 0 && (reached & stageBit(code)) === 0) {
      reached |= stageBit(code);
      writes.push({ op: 'incr', key: near(session, K.funnel(week, code)), by: 1 });
    }
    const rec: SessionRecord = { v: MACHINE_VERSION, state: n.state, ctx: n.ctx, at: now, reached, week, ...(desk ? { desk } : {}) };
    writes.push({ op: 'set', key: K.session(session), value: sessions.encode(rec), ttlMs });
    writes.push({ op: 'set', key: K.transcript(session), value: [...log, ...add].slice(-TRANSCRIPT_MAX) as unknown as Json, ttlMs });
    if (desk && !prev?.desk) writes.push({ op: 'index', key: near(session, K.desk), member: session, score: desk.since });
    if (!desk && prev?.desk) writes.push({ op: 'unindex', key: near(session, K.desk), member: session });
    return writes;
  }

  /** The desk after a machine turn: a hand-off starts waiting for a person; leaving it ends the desk. */
  private deskAfter(prev: DeskState | undefined, n: { state: StateName; ctx: ChatContext }): DeskState | undefined {
    if (!inHandoff(n.state)) return undefined;
    if (prev) return prev;
    return {
      status: 'waiting',
      reason: n.ctx.error === 'too_many_tries' ? 'misunderstood' : 'asked',
      since: this.deps.clock.now(),
      ...(n.ctx.returnTo ? { stage: n.ctx.returnTo } : {}),
    };
  }

  private line(by: Line['by'], text: string, state: StateName, agent?: string): Line {
    return { at: this.deps.clock.now(), by, text, code: stageCode(state), ...(agent ? { agent } : {}) };
  }

  private botLine(n: { state: StateName; ctx: ChatContext }, welcome = false): Line {
    return this.line('bot', view(n.state, n.ctx, welcome).bot, n.state);
  }

  private emit(session: string, lines: Line[], extra?: Json, deskChanged = false): void {
    const bus = this.deps.bus;
    if (!bus) return;
    for (const l of lines) bus.emit(TOPIC.session(session), { kind: 'line', line: lineView(l) as unknown as Json });
    if (extra) bus.emit(TOPIC.session(session), extra);
    if (deskChanged) bus.emit(TOPIC.desk, { kind: 'changed', session });
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

  private answer(session: string, r: { state: StateName; ctx: ChatContext }, welcome = false, desk?: DeskState): TurnAnswer {
    const v = view(r.state, r.ctx, welcome);
    const base: TurnAnswer = { session, ...v, choices: v.choices.map((c) => c.label), ...(r.ctx.receiptNo ? { receiptNo: r.ctx.receiptNo } : {}) };
    if (desk?.status === 'held' && desk.agent) {
      // a person answers: the customer writes to them; the guide's choices come back with the hand-back
      return { ...base, bot: `상담원 ${desk.agent.name}님이 답변하고 있어요. 메시지를 적어 주세요.`, choices: [], desk: { status: 'answering', agent: desk.agent.name } };
    }
    if (desk?.status === 'waiting') return { ...base, desk: { status: 'waiting' } };
    return base;
  }

  async start(subject: string, referralCode?: string): Promise<TurnAnswer> {
    if (referralCode !== undefined && !(await this.deps.referrals.exists(referralCode))) {
      throw notFound('referral_not_found', `no customer holds the referral code ${referralCode}`);
    }
    const session = `cs_${randomBytes(16).toString('base64url')}`;
    const r = this.initial(subject, referralCode?.toUpperCase());
    await this.deps.store.update([], () => ({
      writes: [
        ...this.commit(session, undefined, r, undefined, [], [this.botLine(r)]),
        { op: 'push', key: near(session, K.recent), value: recentEntries.encode({ session, at: this.deps.clock.now() }), cap: RECENT_MAX },
      ],
      result: null,
    }));
    return this.answer(session, r);
  }

  /** The session as it stands (no turn). */
  async get(session: string): Promise<TurnAnswer> {
    const rec = this.live(await this.deps.store.get(K.session(session)));
    return this.answer(session, rec, false, rec.desk);
  }

  async turn(session: string, input: { choice?: string; message?: string }): Promise<TurnAnswer> {
    const key = K.session(session);
    const tkey = K.transcript(session);
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
      type Out = { owed: true } | (Restored & { owed: false; from?: StateName; desk?: DeskState; added: Line[]; deskChanged: boolean });
      const out = await this.deps.store.update<Out>([key, tkey], ([cur, log]) => {
        const prev = this.live(cur);
        const r = this.restore(cur!);
        const said = this.line('customer', input.message ?? input.choice ?? '', prev.state);
        if (r.restarted) {
          const added = [said, this.botLine(r, true)];
          return {
            writes: this.commit(session, prev, r, undefined, lines(log), added),
            result: { ...r, owed: false, added, deskChanged: prev.desk !== undefined },
          };
        }
        if (r.ctx.pending) return { writes: [], result: { owed: true } };
        if (prev.desk?.status === 'held') {
          // a person answers: the customer's words are for them, not for the guide
          if (input.choice !== undefined) {
            throw new AppError('invalid', 'choice_not_offered', `"${input.choice}" is not one of the offered choices: a person is answering, send a message`, {
              choices: [],
            });
          }
          return {
            writes: this.commit(session, prev, r, prev.desk, lines(log), [said]),
            result: { ...r, owed: false, desk: prev.desk, added: [said], deskChanged: true },
          };
        }
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
        const desk = this.deskAfter(prev.desk, n);
        // the guide's answer to an owed registration is written once it is settled
        const added = n.ctx.pending ? [said] : [said, this.botLine(n)];
        return {
          writes: this.commit(session, prev, n, desk, lines(log), added),
          result: { ...n, restarted: false, owed: false, from: r.state, ...(desk ? { desk } : {}), added, deskChanged: desk !== prev.desk },
        };
      });
      if (out.owed) {
        await this.settle(session);
        continue;
      }
      this.emit(session, out.added, undefined, out.deskChanged || out.desk !== undefined);
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
      return this.answer(session, done, false, out.desk);
    }
    throw new AppError('unavailable', 'session_busy', 'the session is finishing a registration; try again');
  }

  // ---- the desk: a person answers in the conversation --------------------------------------

  private entry(session: string, rec: SessionRecord): DeskEntry {
    const d = rec.desk;
    return {
      session,
      status: d?.status ?? 'none',
      ...(d ? { reason: d.reason, since: iso(d.since) } : {}),
      ...(d?.agent ? { agent: d.agent } : {}),
      stage: wireStage(rec.state),
      stageCode: stageCode(rec.state),
      ...(d?.stage ? { returnTo: wireStage(d.stage) } : {}),
      subject: rec.ctx.subject,
      ...(rec.ctx.name ? { name: rec.ctx.name } : {}),
      at: iso(rec.at),
    };
  }

  /**
   * The desk's lists: the conversations waiting for a person or held by one (oldest first), and the
   * last RECENT_MAX conversations started that are still kept (newest first). Entries of sessions
   * that expired, or left the desk without the index knowing, are dropped from the index.
   */
  async inbox(): Promise<{ desk: DeskEntry[]; recent: DeskEntry[] }> {
    const { store } = this.deps;
    const members = (await mergedIndexRange(store, across(K.desk), { limit: 500 })).map((e) => e.member);
    // every partition's list, newest first, then the global one of before (ids, older than every entry since)
    const [newer, older] = await Promise.all([
      newestAcross(store, partitionKeys(K.recent), RECENT_MAX, (v: Json) => decodeList(recentEntries, [v])[0]),
      store.range<Json>(K.recent),
    ]);
    const olderIds = older.filter((v): v is string => typeof v === 'string').reverse();
    const recentIds = [...new Set([...newer.map((e) => e.session), ...olderIds])].slice(0, RECENT_MAX);
    const raws = await store.getMany([...members, ...recentIds].map(K.session));
    const now = this.deps.clock.now();
    const kept = (raw: Json | undefined) => {
      const rec = sessions.decode(raw);
      return rec && now - rec.at <= this.deps.sessionTtlMs ? rec : undefined;
    };
    const desk: DeskEntry[] = [];
    const stale: string[] = [];
    members.forEach((id, i) => {
      const rec = kept(raws[i]);
      if (rec?.desk) desk.push(this.entry(id, rec));
      else stale.push(id);
    });
    for (const id of stale) await Promise.all([store.unindex(K.desk, id), store.unindex(near(id, K.desk), id)]);
    const recent: DeskEntry[] = [];
    recentIds.forEach((id, i) => {
      const rec = kept(raws[members.length + i]);
      if (rec) recent.push(this.entry(id, rec));
    });
    return { desk, recent };
  }

  /** How many sessions started this week (Korean time) reached each of the nine stages. */
  async funnel(): Promise<{ week: string; from: string; to: string; stages: { stage: string; stageCode: number; sessions: number }[] }> {
    const w = weekOf(this.deps.clock.now());
    // each stage's count is kept per partition (and globally before): the total is the sum
    const parts = FUNNEL_STAGES.map((s) => across(K.funnel(w.week, s.stageCode)));
    const counts = await this.deps.store.getMany(parts.flat());
    const sum = (i: number) => counts.slice(i * parts[0]!.length, (i + 1) * parts[0]!.length).reduce<number>((a, c) => a + (typeof c === 'number' ? c : 0), 0);
    return {
      week: w.week,
      from: iso(w.from),
      to: iso(w.to),
      stages: FUNNEL_STAGES.map((s, i) => ({ ...s, sessions: sum(i) })),
    };
  }

  /** The conversation's transcript, for the customer's page after a reload (the session id is the credential). */
  async transcript(session: string): Promise<{ transcript: LineView[]; transcriptMax: number }> {
    const [raw, log] = await this.deps.store.getMany([K.session(session), K.transcript(session)]);
    this.live(raw);
    return { transcript: lines(log).map(lineView), transcriptMax: TRANSCRIPT_MAX };
  }

  /** A conversation for the desk: where it stands, the values collected and its transcript. */
  async conversation(session: string): Promise<DeskEntry & { values: Record<string, Json>; transcript: LineView[]; transcriptMax: number; answer: TurnAnswer }> {
    const [raw, log] = await this.deps.store.getMany([K.session(session), K.transcript(session)]);
    const rec = this.live(raw);
    const c = rec.ctx;
    const values: Record<string, Json> = {};
    const put = (k: string, v: Json | undefined) => {
      if (v !== undefined) values[k] = v;
    };
    put('subject', c.subject);
    put('source', c.source ? SOURCE_LABELS[c.source] : undefined);
    put('need', c.category ? NEED_LABELS[c.category] : undefined);
    put('needText', needText(c));
    put('product', c.category ? productFor(c.category).name : undefined);
    put('name', c.name);
    put('contact', c.contact);
    put('email', c.email);
    put('memo', c.memo);
    put('referralCode', c.referredBy);
    put('receiptNo', c.receiptNo);
    put('callbackNo', c.callbackNo);
    put('upsellAccepted', c.upsellAccepted);
    return {
      ...this.entry(session, rec),
      values,
      transcript: lines(log).map(lineView),
      transcriptMax: TRANSCRIPT_MAX,
      answer: this.answer(session, rec, false, rec.desk),
    };
  }

  /**
   * Takes a waiting conversation for `agent`: one atomic update of the session, so of agents racing
   * on any process exactly one holds it. Taking one's own again changes nothing.
   */
  async take(session: string, agent: Agent): Promise<DeskEntry> {
    const key = K.session(session);
    const out = await this.deps.store.update([key, K.transcript(session)], ([raw, log]) => {
      const rec = this.live(raw);
      const d = rec.desk;
      if (!d) throw conflict('not_waiting', 'the conversation is not waiting for a person', { stage: wireStage(rec.state) });
      const now = this.deps.clock.now();
      const idle = d.status === 'held' && now - (d.lastAt ?? d.takenAt ?? 0) > HOLD_IDLE_MS;
      if (d.status === 'held' && d.agent?.id !== agent.id && !idle) {
        throw conflict('desk_taken', `${d.agent?.name ?? 'another person'} already answers this conversation`, { agent: d.agent });
      }
      if (d.status === 'held' && d.agent?.id === agent.id) return { writes: [], result: { rec, added: [] as Line[] } };
      const desk: DeskState = { ...d, status: 'held', agent, takenAt: now, lastAt: now };
      // a holder silent for HOLD_IDLE_MS gives the conversation up to the next person who takes it
      const added = [this.line('note', idle ? `상담원 ${agent.name}님이 이어받았어요.` : `상담원 ${agent.name}님이 연결되었어요.`, rec.state, agent.name)];
      const next = { ...rec, desk };
      return { writes: this.commit(session, rec, rec, desk, lines(log), added), result: { rec: next, added } };
    });
    if (out.added.length) this.emit(session, out.added, { kind: 'desk', answer: this.answer(session, out.rec, false, out.rec.desk) as unknown as Json }, true);
    return this.entry(session, out.rec);
  }

  private holder(rec: SessionRecord, agent: Agent): DeskState {
    const d = rec.desk;
    if (d?.status !== 'held' || d.agent?.id !== agent.id) {
      throw conflict('not_holder', 'you do not hold this conversation: take it first', { holder: d?.status === 'held' ? (d.agent ?? null) : null });
    }
    return d;
  }

  /** An answer of the person holding the conversation, shown live in the customer's chat. */
  async say(session: string, agent: Agent, text: string): Promise<LineView> {
    const out = await this.deps.store.update([K.session(session), K.transcript(session)], ([raw, log]) => {
      const rec = this.live(raw);
      const d = this.holder(rec, agent);
      const l = this.line('agent', text, rec.state, agent.name);
      return { writes: this.commit(session, rec, rec, { ...d, lastAt: l.at }, lines(log), [l]), result: l };
    });
    this.emit(session, [out], undefined, true);
    return lineView(out);
  }

  /** The person hands the conversation back to the guide, at the journey stage it left. */
  async handBack(session: string, agent: Agent): Promise<TurnAnswer> {
    const key = K.session(session);
    const rec = this.live(await this.deps.store.get(key));
    this.holder(rec, agent);
    // an owed callback request is registered first (the journey stage cannot take its result)
    if (rec.ctx.pending) await this.settle(session);
    const out = await this.deps.store.update([key, K.transcript(session)], ([raw, log]) => {
      const cur = this.live(raw);
      this.holder(cur, agent);
      if (cur.ctx.pending) throw new AppError('unavailable', 'session_busy', 'the session is finishing a registration; try again');
      const n = inHandoff(cur.state)
        ? (() => {
            const [next] = transition(chatMachine, chatMachine.resolveState({ value: cur.state, context: cur.ctx }), { type: 'ANSWER', resume: true });
            return { state: next.value as StateName, ctx: next.context };
          })()
        : { state: cur.state, ctx: cur.ctx };
      const added = [this.line('note', `상담원 ${agent.name}님이 상담을 안내로 돌려보냈어요.`, n.state, agent.name), this.botLine(n)];
      return { writes: this.commit(session, cur, n, undefined, lines(log), added), result: { n, added } };
    });
    const answer = this.answer(session, out.n);
    this.emit(session, out.added, { kind: 'returned', answer: answer as unknown as Json }, true);
    return answer;
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
      const out = await store.update([key, K.transcript(session)], ([raw, log]) => {
        if (!raw) throw sessionNotFound();
        const rec = sessions.decode(raw)!;
        const [next] = transition(chatMachine, chatMachine.resolveState({ value: rec.state, context: rec.ctx }), event);
        const n = { state: next.value as StateName, ctx: next.context };
        const desk = this.deskAfter(rec.desk, n);
        const added = [this.botLine(n)];
        return { writes: this.commit(session, rec, n, desk, lines(log), added), result: { n, added, desk } };
      });
      this.emit(session, out.added, undefined, out.desk !== undefined);
      return out.n;
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
      (no, at) =>
        email
          ? this.deps.mail.writes(
              `chat:${no}:receipt`,
              {
                to: email,
                subject: `[maru] 상담 접수 ${no}`,
                text: `${ctx.name}님, 상담이 접수되었습니다.\n접수번호: ${no}\n신청 상품: ${product.name}\n담당자가 ${ctx.contact}(으)로 연락드리겠습니다.`,
              },
              at,
            )
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

const lineView = (l: Line): LineView => ({ at: iso(l.at), by: l.by, text: l.text, stageCode: l.code, ...(l.agent ? { agent: l.agent } : {}) });

const sessionNotFound = () =>
  notFound('session_not_found', 'unknown or expired conversation session; start a new one with POST /api/chat/start');
