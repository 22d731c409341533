import { josa } from 'es-hangul';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { codec } from '../store/codec.js';
import { mergedIndexCount, mergedIndexRange, partitionKeyFor, partitionKeys, type Store, type Write } from '../store/port.js';

/**
 * Coaching calls: an owner's vision, actions (each in one of four phases) and rewards. Setting an
 * action's status is idempotent (set, never toggle), and completing it pays its reward once.
 */

export const PHASES = ['티', '옴', '타', '음'] as const;
export type Phase = (typeof PHASES)[number];
export const STATUSES = ['진행', '완료'] as const;
export type ActionStatus = (typeof STATUSES)[number];
/** Before the first call an action is 대기 (not started). */
export type ActionState = ActionStatus | '대기';
export const DEFAULT_TIME_ZONE = 'Asia/Seoul';
export const MAX_ACTIONS = 50;

export interface Action {
  id: string;
  title: string;
  phase: Phase;
  status: ActionState;
  reward: number;
  /** When the reward was paid (first 완료), and that day in the owner's time zone. */
  paidAt?: string;
  completedOn?: string;
}

export interface Owner {
  id: string;
  vision?: string;
  timeZone: string;
  actions: Action[];
  /** Rewards paid so far. */
  points: number;
  createdAt: string;
  updatedAt: string;
}

const owners = codec<Owner>('coaching owner', (r) => typeof r.id === 'string' && Array.isArray(r.actions));

export interface Profile {
  vision?: string;
  timeZone: string;
  points: number;
  actions: Action[];
}

export interface OwnerInput {
  vision?: string;
  timeZone?: string;
  actions: { id: string; title: string; phase: Phase; reward: number }[];
}

export interface Nudge {
  date: string;
  title: string;
  message: string;
  vision?: string;
  action: Action;
}

const key = (ownerId: string) => `coach:owner:${ownerId}`;
/**
 * Every registered owner, scored by registration time: one list per partition (`coach:owners:{#p}`,
 * docs/partitions.md), written in the registration's own update beside the owner, merged on read
 * with the global list of before the partitions (`coach:owners`, still read).
 */
const OWNERS = 'coach:owners';
const ownersKey = (ownerId: string) => partitionKeyFor(OWNERS, key(ownerId));
const ALL_OWNERS = [OWNERS, ...partitionKeys(OWNERS)];
export const MAX_PAGE = 100;

/** An owner as staff see it in the list: counts instead of the actions. */
export interface OwnerSummary {
  ownerId: string;
  vision?: string;
  timeZone: string;
  points: number;
  actions: Record<ActionState, number>;
  createdAt: string;
  updatedAt: string;
}

/** YYYY-MM-DD of `ms` in the time zone. */
export function dayIn(timeZone: string, ms: number): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms);
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export class CoachService {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  private iso = () => new Date(this.deps.clock.now()).toISOString();

  /**
   * Registers an owner or replaces their vision and action list. Actions kept by id keep their
   * status and paid reward; dropped ids are gone. Answers whether the owner is new.
   */
  async register(ownerId: string, input: OwnerInput): Promise<{ created: boolean; profile: Profile }> {
    const ids = new Set<string>();
    for (const a of input.actions) {
      if (ids.has(a.id)) throw new AppError('invalid', 'duplicate_action', `action id ${a.id} appears twice`, { actionId: a.id });
      ids.add(a.id);
    }
    const k = key(ownerId);
    return this.deps.store.update<{ created: boolean; profile: Profile }>([k], ([cur]) => {
      const prev = owners.decode(cur);
      const now = this.iso();
      const before = new Map((prev?.actions ?? []).map((a) => [a.id, a]));
      const owner: Owner = {
        id: ownerId,
        ...(input.vision ? { vision: input.vision } : {}),
        timeZone: input.timeZone ?? prev?.timeZone ?? DEFAULT_TIME_ZONE,
        actions: input.actions.map((a) => {
          const old = before.get(a.id);
          return {
            id: a.id,
            title: a.title,
            phase: a.phase,
            reward: a.reward,
            status: old?.status ?? '대기',
            ...(old?.paidAt ? { paidAt: old.paidAt, completedOn: old.completedOn } : {}),
          };
        }),
        points: prev?.points ?? 0,
        createdAt: prev?.createdAt ?? now,
        updatedAt: now,
      };
      // the index entry goes with the owner (an owner registered before the index joins it here)
      const writes: Write[] = [
        { op: 'set', key: k, value: owners.encode(owner) },
        { op: 'index', key: ownersKey(ownerId), member: ownerId, score: Date.parse(owner.createdAt) },
      ];
      return { writes, result: { created: !prev, profile: profileOf(owner) } };
    });
  }

  private async owner(ownerId: string): Promise<Owner> {
    const o = owners.decode(await this.deps.store.get(key(ownerId)));
    if (!o) throw notFound('owner_not_found', `no coaching owner ${ownerId}`);
    return o;
  }

  /** Owners newest first, `limit` (at most MAX_PAGE) from `offset`, and how many there are. */
  async list(page: { limit: number; offset: number }): Promise<{ owners: OwnerSummary[]; total: number }> {
    const limit = Math.min(Math.max(1, page.limit), MAX_PAGE);
    const [total, entries] = await Promise.all([
      mergedIndexCount(this.deps.store, ALL_OWNERS),
      mergedIndexRange(this.deps.store, ALL_OWNERS, { reverse: true, offset: page.offset, limit }),
    ]);
    const found = await this.deps.store.getMany(entries.map((e) => key(e.member)));
    const list = found.flatMap((v) => {
      const o = owners.decode(v);
      return o ? [summaryOf(o)] : [];
    });
    return { owners: list, total };
  }

  async profile(ownerId: string): Promise<Profile> {
    return profileOf(await this.owner(ownerId));
  }

  /**
   * The card of the day: the first open action in the order of the phases (티, 옴, 타, 음; within a
   * phase, the owner's order). Doing another action leaves the card as it is; completing the card's
   * own action moves it on to the next. Undefined when every action is done (or none).
   */
  async nudge(ownerId: string): Promise<Nudge | undefined> {
    const o = await this.owner(ownerId);
    const date = dayIn(o.timeZone, this.deps.clock.now());
    const open = o.actions.filter((a) => a.status !== '완료');
    if (open.length === 0) return undefined;
    const action = open.reduce((best, a) => (PHASES.indexOf(a.phase) < PHASES.indexOf(best.phase) ? a : best));
    return {
      date,
      title: '오늘의 한 걸음',
      message: `${o.vision ? `"${o.vision}"${josa.pick(o.vision, '을/를')} 향해, ` : ''}오늘은 "${action.title}"부터 해 볼까요? 완료하면 ${action.reward}점을 드려요.`,
      ...(o.vision ? { vision: o.vision } : {}),
      action,
    };
  }

  /** Sets the status (a retry of the same call changes nothing); 완료 pays the reward the first time only. */
  async setAction(ownerId: string, actionId: string, status: ActionStatus): Promise<{ action: Action; rewarded: boolean; reward: number; points: number }> {
    const k = key(ownerId);
    return this.deps.store.update([k], ([cur]) => {
      if (!cur) throw notFound('owner_not_found', `no coaching owner ${ownerId}`);
      const o = owners.decode(cur)!;
      const i = o.actions.findIndex((a) => a.id === actionId);
      if (i < 0) throw notFound('action_not_found', `owner ${ownerId} has no action ${actionId}`, { actionId });
      const old = o.actions[i]!;
      const pay = status === '완료' && !old.paidAt;
      const now = this.deps.clock.now();
      const action: Action = {
        ...old,
        status,
        ...(pay ? { paidAt: new Date(now).toISOString(), completedOn: dayIn(o.timeZone, now) } : {}),
      };
      const points = o.points + (pay ? old.reward : 0);
      const result = { action, rewarded: pay, reward: old.reward, points };
      if (old.status === status && !pay) return { writes: [], result };
      const next: Owner = { ...o, actions: o.actions.map((a, j) => (j === i ? action : a)), points, updatedAt: new Date(now).toISOString() };
      return { writes: [{ op: 'set', key: k, value: owners.encode(next) }], result };
    });
  }
}

function summaryOf(o: Owner): OwnerSummary {
  const actions: Record<ActionState, number> = { 대기: 0, 진행: 0, 완료: 0 };
  for (const a of o.actions) actions[a.status] += 1;
  return {
    ownerId: o.id,
    ...(o.vision ? { vision: o.vision } : {}),
    timeZone: o.timeZone,
    points: o.points,
    actions,
    createdAt: o.createdAt,
    updatedAt: o.updatedAt,
  };
}

function profileOf(o: Owner): Profile {
  return { ...(o.vision ? { vision: o.vision } : {}), timeZone: o.timeZone, points: o.points, actions: o.actions };
}
