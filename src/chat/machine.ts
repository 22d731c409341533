import { assign, setup } from 'xstate';
import { isNothing } from './classify.js';
import { normaliseEmail, normaliseName, normalisePhone } from './contact.js';
import { PRODUCT_RULES } from './catalog.js';
import type { EditTarget, Need, Source } from './keywords.js';

/**
 * The guided conversation as one flat XState statechart: the journey greet -> need -> recommend ->
 * collect -> confirm -> received -> track -> upsell -> referral -> sharing, plus the hand-off to a person
 * (handoffContact, handoff) that every stage offers. Guards hold the rules; the machine has no
 * delayed transitions, no children and no side effects (the service turns `pending` into the
 * intake registration and the mail, then feeds the result back as an event), so a snapshot is
 * plain JSON and any process can continue it with XState's pure `transition`.
 *
 * Bump MACHINE_VERSION whenever states or context change shape: a stored session of another version
 * starts again at greet. (Version 1 gained the confirm stage and optional context keys only: every
 * snapshot it stored is a valid snapshot of this machine, so it stands.)
 */
export const MACHINE_VERSION = 1;

/** The interface document's nine stages (stages.ts): what the wire says (`stage`, `stageCode`). */
import { STAGES, type WireStage } from './stages.js';
export { STAGES, type WireStage };
/**
 * The journey's states: the nine stages, and the summary the customer confirms (`confirm`), a step
 * inside collect: it reports stage `collect` and collect's code, with the `summary` card.
 */
export const JOURNEY = ['greet', 'need', 'recommend', 'collect', 'confirm', 'received', 'track', 'upsell', 'referral', 'sharing'] as const;
export type Stage = (typeof JOURNEY)[number];
/** Hand-off states (reported as stage "handoff", stageCode 0). */
export type StateName = Stage | 'handoffContact' | 'handoff';

/** The stage a state reports on the wire. */
export const wireStage = (s: StateName): WireStage | 'handoff' => (s === 'confirm' ? 'collect' : s === 'handoffContact' ? 'handoff' : s);
/** The wire's stageCode of a state: its stage's position from 1; the hand-off 0. */
export const stageCode = (s: StateName): number => (STAGES as readonly string[]).indexOf(wireStage(s)) + 1;

/** A failed answer is asked again with a clearer hint; the third failure in a row hands off to a person. */
export const MAX_RETRIES = 3;

export type Field = 'name' | 'contact' | 'email' | 'memo';
export const FIELDS: readonly Field[] = ['name', 'contact', 'email', 'memo'];

export interface Progress {
  status: string;
  label: string;
}

export interface ChatContext {
  subject: string;
  source?: Source;
  category?: Need;
  /** The customer's own words for the need, when typed. */
  need?: string;
  name?: string;
  contact?: string;
  email?: string | null;
  memo?: string | null;
  /** The collect question being asked. */
  field?: Field;
  /** Every field is answered: a changed field or product goes back to the summary (confirm). */
  review?: boolean;
  /** The summary's list of what can be changed is shown. */
  editing?: boolean;
  receiptNo?: string;
  /** The receipt's access key (tracking and mail resend on the intake routes). */
  accessKey?: string;
  customerId?: number;
  progress?: Progress;
  upsellAccepted?: boolean;
  upsellCode?: number;
  /** The customer asked for a referral code. */
  referral?: boolean;
  /** The referral code the customer arrived with (counted at registration). */
  referredBy?: string;
  /** Input buffer: the last free text. */
  buffer?: string;
  retries: number;
  /** Why the last answer was not taken (a key of the hint table). */
  error?: string;
  /** A side effect the service owes this session before the next answer. */
  pending?: 'receipt' | 'callback';
  returnTo?: Stage;
  callbackNo?: string;
}

/** One answer of the customer: a choice (already mapped to its meaning) or classified free text. */
export interface AnswerEvent {
  type: 'ANSWER';
  text?: string;
  source?: Source;
  need?: Need;
  yes?: boolean;
  handoff?: boolean;
  skip?: boolean;
  restart?: boolean;
  resume?: boolean;
  refresh?: boolean;
  /** The summary line to change. */
  edit?: EditTarget;
  /** Asks to change something on the summary. */
  change?: boolean;
  /** The receipt's progress, read from the intake records by the service before the turn. */
  progress?: Progress;
}
export type ChatEvent =
  | AnswerEvent
  | { type: 'REGISTERED'; receiptNo: string; customerId: number; accessKey?: string }
  | { type: 'CALLBACK_REGISTERED'; receiptNo: string };

type Ctx = { context: ChatContext; event: ChatEvent };
type Assignment = Parameters<typeof assign<ChatContext, ChatEvent, undefined, ChatEvent, never>>[0];
/** XState's assign, typed for this machine's context and events. */
const set = (a: Assignment) => assign<ChatContext, ChatEvent, undefined, ChatEvent, never>(a);
const ans = (e: ChatEvent): AnswerEvent => (e.type === 'ANSWER' ? e : { type: 'ANSWER' });
const typed = (e: ChatEvent) => ans(e).text;

/** Asked for a person: by the choice anywhere, by words only where free text is not a field value. */
const wantsPerson = ({ event }: Ctx) => ans(event).handoff === true;
const wantsPersonByChoice = ({ event }: Ctx) => ans(event).handoff === true && ans(event).text === undefined;

const fieldValue = (field: Field | undefined, e: AnswerEvent): string | null | undefined => {
  if (e.skip && (field === 'email' || field === 'memo')) return null;
  if (e.text === undefined) return undefined;
  switch (field) {
    case 'name':
      return normaliseName(e.text);
    case 'contact':
      return normalisePhone(e.text);
    case 'email':
      return normaliseEmail(e.text);
    case 'memo': {
      const m = e.text.normalize('NFKC').trim();
      if (m.length < 1 || m.length > 500) return undefined;
      // "네", "없어요": no remark, never the remark itself
      return isNothing(m) ? null : m;
    }
    default:
      return undefined;
  }
};

/** A failed answer: count it and remember why; the stage stays. */
const retry = (error: string) => set(({ context }: Ctx) => ({ retries: context.retries + 1, error }));
const moved = { retries: 0, error: undefined } as const;
const tooManyTries = ({ context }: Ctx) => context.retries + 1 >= MAX_RETRIES;
const yesOrNo = ({ event }: Ctx) => ans(event).yes !== undefined;

/**
 * To a person from `stage` when `when` holds: with a known contact the callback request is owed at
 * once (handoff); otherwise the contact is asked first (handoffContact). A second request after a
 * registered callback only shows it again.
 */
const toPerson = (stage: Stage, when: (a: Ctx) => boolean, error?: string) => [
  {
    guard: (a: Ctx) => when(a) && a.context.callbackNo !== undefined,
    target: 'handoff' as const,
    actions: set({ returnTo: stage, ...moved, ...(error ? { error } : {}) }),
  },
  {
    guard: (a: Ctx) => when(a) && a.context.contact !== undefined,
    target: 'handoff' as const,
    actions: set({ returnTo: stage, pending: 'callback' as const, ...moved, ...(error ? { error } : {}) }),
  },
  { guard: when, target: 'handoffContact' as const, actions: set({ returnTo: stage, ...moved, ...(error ? { error } : {}) }) },
];
/** The customer's own request for a person, and the hand-off after the third failed answer. */
const handoffs = (stage: Stage, request: (a: Ctx) => boolean = wantsPerson) => ({
  request: toPerson(stage, request),
  exhausted: toPerson(stage, tooManyTries, 'too_many_tries'),
});

/** Back to the stage the customer left for a person. */
const resume = (when: (a: Ctx) => boolean) =>
  JOURNEY.map((s) => ({ guard: (a: Ctx) => when(a) && a.context.returnTo === s, target: s, actions: set({ returnTo: undefined, ...moved }) }));

/**
 * A new conversation in the same session: everything but the subject is forgotten (assign merges, so
 * clear each key), and the referral code the session came with while no receipt has counted it.
 */
const restart = set(({ context }: Ctx) => ({
  ...Object.fromEntries(Object.keys(context).map((k) => [k, undefined])),
  subject: context.subject,
  retries: 0,
  ...(context.referredBy && context.receiptNo === undefined ? { referredBy: context.referredBy } : {}),
}));

const journey = (stage: Stage, steps: object[], error: string, request?: (a: Ctx) => boolean) => {
  const h = handoffs(stage, request);
  return { on: { ANSWER: [...h.request, ...steps, ...h.exhausted, { actions: retry(error) }] } };
};

export const chatMachine = setup({
  types: {} as { context: ChatContext; events: ChatEvent; input: { subject: string; referredBy?: string } },
}).createMachine({
  id: 'chat',
  context: ({ input }) => ({
    subject: input.subject,
    retries: 0,
    ...(input.referredBy ? { referredBy: input.referredBy } : {}),
  }),
  initial: 'greet',
  states: {
    greet: journey(
      'greet',
      [
        {
          guard: ({ event }: Ctx) => ans(event).source !== undefined,
          target: 'need',
          actions: set(({ event }: Ctx) => ({ source: ans(event).source, buffer: typed(event), ...moved })),
        },
      ],
      'unknown_source',
    ),
    need: journey(
      'need',
      [
        {
          guard: ({ event }: Ctx) => ans(event).need !== undefined,
          target: 'recommend',
          actions: set(({ event }: Ctx) => {
            const e = ans(event);
            return { category: e.need, need: e.text ?? e.need, upsellCode: PRODUCT_RULES[e.need!], buffer: e.text, ...moved };
          }),
        },
      ],
      'unknown_need',
    ),
    recommend: journey(
      'recommend',
      [
        // a product chosen again from the summary goes back to it; the fields are known
        { guard: ({ context, event }: Ctx) => ans(event).yes === true && context.review === true, target: 'confirm', actions: set({ ...moved }) },
        { guard: ({ event }: Ctx) => ans(event).yes === true, target: 'collect', actions: set({ field: 'name' as Field, ...moved }) },
        { guard: ({ event }: Ctx) => ans(event).yes === false, target: 'need', actions: set({ category: undefined, upsellCode: undefined, ...moved }) },
      ],
      'yes_or_no',
    ),
    collect: journey(
      'collect',
      [
        {
          // the last field, or a field changed from the summary: the summary is shown to confirm
          guard: ({ context, event }: Ctx) => (context.field === 'memo' || context.review === true) && fieldValue(context.field, ans(event)) !== undefined,
          target: 'confirm',
          actions: set(({ context, event }: Ctx) => ({ [context.field!]: fieldValue(context.field, ans(event)), field: undefined, review: true, ...moved })),
        },
        {
          guard: ({ context, event }: Ctx) => fieldValue(context.field, ans(event)) !== undefined,
          target: 'collect',
          actions: set(({ context, event }: Ctx) => ({
            [context.field!]: fieldValue(context.field, ans(event)),
            field: FIELDS[FIELDS.indexOf(context.field!) + 1],
            ...moved,
          })),
        },
      ],
      'invalid_field',
      // typed words are field values here (a memo may say "전화주세요"): only the choice hands off
      wantsPersonByChoice,
    ),
    confirm: journey(
      'confirm',
      [
        {
          // a line named with a change asked for ("연락처 수정"), or picked from the list
          guard: ({ context, event }: Ctx) => {
            const e = ans(event);
            return e.edit === 'product' && (context.editing === true || e.change === true || e.yes === false);
          },
          target: 'need',
          actions: set({ editing: undefined, category: undefined, upsellCode: undefined, ...moved }),
        },
        {
          guard: ({ context, event }: Ctx) => {
            const e = ans(event);
            return e.edit !== undefined && (context.editing === true || e.change === true || e.yes === false);
          },
          target: 'collect',
          actions: set(({ event }: Ctx) => ({ field: ans(event).edit as Field, editing: undefined, ...moved })),
        },
        { guard: ({ event }: Ctx) => ans(event).restart === true, target: 'greet', actions: restart },
        { guard: ({ context, event }: Ctx) => context.editing === true && ans(event).resume === true, target: 'confirm', actions: set({ editing: undefined, ...moved }) },
        {
          guard: ({ context, event }: Ctx) => context.editing !== true && (ans(event).change === true || ans(event).yes === false),
          target: 'confirm',
          actions: set({ editing: true, ...moved }),
        },
        // only a confirmation registers: the receipt is owed
        {
          guard: ({ context, event }: Ctx) => context.editing !== true && ans(event).yes === true,
          target: 'received',
          actions: set({ pending: 'receipt' as const, review: undefined, ...moved }),
        },
      ],
      'confirm_or_change',
    ),
    received: {
      on: {
        REGISTERED: {
          guard: ({ context }) => context.pending === 'receipt',
          actions: set(({ event }) =>
            event.type === 'REGISTERED'
              ? { receiptNo: event.receiptNo, customerId: event.customerId, accessKey: event.accessKey, pending: undefined }
              : {},
          ),
        },
        ...journey(
          'received',
          [
            {
              guard: ({ context, event }: Ctx) => context.receiptNo !== undefined && yesOrNo({ context, event }),
              target: 'track',
              actions: set(({ event }: Ctx) => ({ progress: ans(event).progress, ...moved })),
            },
          ],
          'yes_or_no',
        ).on,
      },
    },
    track: journey(
      'track',
      [
        {
          guard: ({ event }: Ctx) => ans(event).refresh === true,
          target: 'track',
          actions: set(({ event }: Ctx) => ({ progress: ans(event).progress, ...moved })),
        },
        { guard: yesOrNo, target: 'upsell', actions: set({ ...moved }) },
      ],
      'yes_or_no',
    ),
    upsell: journey(
      'upsell',
      [{ guard: yesOrNo, target: 'referral', actions: set(({ event }: Ctx) => ({ upsellAccepted: ans(event).yes, ...moved })) }],
      'yes_or_no',
    ),
    referral: journey(
      'referral',
      [{ guard: yesOrNo, target: 'sharing', actions: set(({ event }: Ctx) => ({ referral: ans(event).yes, ...moved })) }],
      'yes_or_no',
    ),
    sharing: {
      on: {
        ANSWER: [
          ...handoffs('sharing').request,
          { guard: ({ event }) => ans(event).restart === true, target: 'greet', actions: restart },
          { actions: retry('restart_only') },
        ],
      },
    },
    handoffContact: {
      on: {
        ANSWER: [
          {
            guard: ({ event }) => ans(event).text !== undefined && normalisePhone(ans(event).text!) !== undefined,
            target: 'handoff',
            actions: set(({ event }) => ({ contact: normalisePhone(ans(event).text!), pending: 'callback' as const, ...moved })),
          },
          ...resume(({ event }) => ans(event).resume === true),
          // never the same question forever: back to where the customer was
          ...resume(tooManyTries),
          { actions: retry('invalid_phone') },
        ],
      },
    },
    handoff: {
      on: {
        CALLBACK_REGISTERED: {
          guard: ({ context }) => context.pending === 'callback',
          actions: set(({ event }) => (event.type === 'CALLBACK_REGISTERED' ? { callbackNo: event.receiptNo, pending: undefined } : {})),
        },
        ANSWER: [
          { guard: ({ event }) => ans(event).restart === true, target: 'greet', actions: restart },
          ...resume(({ event }) => ans(event).resume === true),
          { actions: retry('resume_or_restart') },
        ],
      },
    },
  },
});

export type ChatMachine = typeof chatMachine;
