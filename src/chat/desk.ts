import { STAGES, type Stage, type StateName } from './machine.js';

/**
 * The desk: a person answers in the guided conversation. A conversation handed off (by the
 * customer's "상담원 연결", or after the third failed answer) waits for a person; one staff member
 * takes it, answers in the customer's chat, and hands it back to the journey at the stage it left.
 * The desk's state lives in the session record (`desk`), so a take is one atomic update of the
 * session; the waiting and held conversations are also in one small index (`chat:desk`).
 */

/** Lines kept in a conversation's transcript (the oldest beyond it are dropped). */
export const TRANSCRIPT_MAX = 200;
/** Conversations the desk lists as recently started (a capped list of session ids). */
export const RECENT_MAX = 100;
/**
 * A held conversation whose person said nothing for this long (ms) may be taken by another: a
 * person who left does not keep the customer waiting.
 */
export const HOLD_IDLE_MS = 10 * 60_000;
/** Longest answer of a person (characters), as a customer's message. */
export const AGENT_MESSAGE_MAX = 500;

export interface Agent {
  id: string;
  name: string;
}

export interface DeskState {
  /** waiting: handed off, nobody answers yet; held: `agent` answers. */
  status: 'waiting' | 'held';
  /** asked: the customer asked for a person; misunderstood: the third failed answer handed it off. */
  reason: 'asked' | 'misunderstood';
  /** When the conversation started waiting (ms). */
  since: number;
  /** The journey stage the conversation returns to. */
  stage?: Stage;
  agent?: Agent;
  takenAt?: number;
  /** The holder's last answer (or the take). */
  lastAt?: number;
}

/** One line of the transcript: what the customer, the guide (bot) or a person said, or a note of the desk. */
export interface Line {
  at: number;
  by: 'customer' | 'bot' | 'agent' | 'note';
  text: string;
  /** The agent's name (by: agent). */
  agent?: string;
  /** The stage code when the line was said (0: the hand-off). */
  code: number;
}

export const HANDOFF_STATES: readonly StateName[] = ['handoffContact', 'handoff'];
export const inHandoff = (s: StateName) => HANDOFF_STATES.includes(s);

/** The bit of a stage code in a session's `reached` mask. */
export const stageBit = (code: number) => 1 << code;

const KST_MS = 9 * 3_600_000;
const DAY_MS = 86_400_000;

/**
 * The ISO week (Monday to Sunday, Korean time) of `ms`: its label (`2026-W48`) and its first and
 * last instant.
 */
export function weekOf(ms: number): { week: string; from: number; to: number } {
  const local = ms + KST_MS;
  const day = Math.floor(local / DAY_MS);
  const weekday = (new Date(day * DAY_MS).getUTCDay() + 6) % 7; // Monday 0
  const monday = day - weekday;
  const thursday = new Date((monday + 3) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const firstThursday = Date.UTC(year, 0, 1) / DAY_MS;
  const jan1Weekday = (new Date(firstThursday * DAY_MS).getUTCDay() + 6) % 7;
  const week1Monday = firstThursday - jan1Weekday + (jan1Weekday > 3 ? 7 : 0);
  const n = Math.floor((monday - week1Monday) / 7) + 1;
  const from = monday * DAY_MS - KST_MS;
  return { week: `${year}-W${String(n).padStart(2, '0')}`, from, to: from + 7 * DAY_MS - 1 };
}

export const WEEK_RE = /^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$/;

/** The funnel's stage names and codes, in order. */
export const FUNNEL_STAGES = STAGES.map((stage, i) => ({ stage, stageCode: i + 1 }));
