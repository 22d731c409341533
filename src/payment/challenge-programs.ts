import type { Logger } from 'pino';
import { outboxWrites, type Deliver } from '../outbox.js';
import type { Json, Store, Write } from '../store/port.js';
import type { LivePrograms, ProgramEvent, ProgramSpec } from '../trading/index.js';
import type { ChallengeLifecycle, EngineEvent } from './lifecycle.js';
import { LEDGER_NEAR } from './receipts.js';
import type { ChallengeProgramPort } from './service.js';

/** The outbox destination that creates and starts a bought challenge's program (in its own partition). */
export const PROGRAMS_DEST = 'programs';

/** Which challenge a program runs: written with the challenge, before the program starts, so its first event finds it. */
const PROGRAM_CHALLENGE = (program: string) => `pay:progchal:${program}`;

export interface ChallengeProgramsOptions {
  store: Store;
  /** The trading service's port (src/trading/program-port.ts). */
  programs: LivePrograms;
  lifecycle: ChallengeLifecycle;
  /** The daily loss limit as a fraction of the account size (CHALLENGE_DAILY_LOSS). */
  dailyLoss: number;
  logger: Pick<Logger, 'warn'>;
}

/**
 * A bought challenge runs as a live trading program (docs/payment.md "Challenges"), through the
 * trading service's `livePrograms` port: an `ema_cross` program on ES with the account size as its
 * capital and the challenge's daily loss limit. The program's exit fills and its stop by the daily
 * loss limit are the challenge's fills and violations. Every process follows the programs' events
 * (the composition root calls `follow` once per process) and the lifecycle applies each event id
 * once, so an event is applied once however many processes see it.
 */
export class ChallengePrograms implements ChallengeProgramPort {
  constructor(private readonly o: ChallengeProgramsOptions) {}

  /**
   * The program a new challenge runs: its id, and the purchase's writes for it: which challenge it
   * runs, and an outbox item (in the ledger's partition, with the purchase) that creates and starts
   * it in its own aggregate. So the purchase stays one update of the ledger, a refused purchase
   * leaves no program, and a committed one gets its program once, even if this process dies before
   * `ensure` below (docs/payment.md "Challenges", docs/partitions.md).
   */
  plan(challenge: string, accountSize: number, now: number): { program: string; spec: ProgramSpec; writes: Write[] } {
    const { programs, dailyLoss } = this.o;
    const program = programs.newId();
    const spec: ProgramSpec = { name: `challenge ${challenge}`, strategy: 'ema_cross', symbol: 'ES', params: {}, capital: accountSize, daily_loss_limit: Math.round(accountSize * dailyLoss) };
    return {
      program,
      spec,
      writes: [
        { op: 'set', key: PROGRAM_CHALLENGE(program), value: challenge },
        ...outboxWrites({ id: `make-program:${program}`, dest: PROGRAMS_DEST, payload: { program, spec } as unknown as Json, createdAt: now }, LEDGER_NEAR),
      ],
    };
  }

  /** Creates and starts a planned program once the purchase is committed (again: nothing changes). */
  ensure(program: string, spec: ProgramSpec): Promise<void> {
    return this.o.programs.ensure(program, spec);
  }

  /** The outbox's deliverer of PROGRAMS_DEST: what `ensure` does, for a purchase whose process did not get to it. */
  deliverers(): Record<string, Deliver> {
    return {
      [PROGRAMS_DEST]: async (item) => {
        const { program, spec } = item.payload as unknown as { program: string; spec: ProgramSpec };
        await this.ensure(program, spec);
      },
    };
  }

  /** Applies the programs' fills and daily-loss stops to their challenges from now on; returns the unsubscribe. */
  follow(): () => void {
    return this.o.programs.follow((ev) => {
      const event = challengeEvent(ev);
      if (!event) return;
      void this.o.store
        .get(PROGRAM_CHALLENGE(ev.program))
        .then((cid) => {
          if (typeof cid === 'string') return this.o.lifecycle.event(cid, event);
        })
        .catch((err: unknown) => this.o.logger.warn({ err }, 'challenge event not applied'));
    });
  }
}

/** A program's exit with its profit or loss is a fill; its stop by the daily loss limit a violation. */
function challengeEvent(ev: ProgramEvent): EngineEvent | undefined {
  if (ev.type === 'trade' && ev.kind === 'exit' && typeof ev.pnl === 'number') {
    return { type: 'fill', event_id: `p${ev.id}`, realized_cents: Math.round(ev.pnl * 100), ts: ev.t };
  }
  if (ev.type === 'status' && ev.state === 'stopped' && ev.reason === 'daily_loss_limit') return { type: 'violation', event_id: `p${ev.id}`, rule: 'daily_loss', ts: ev.t };
  return undefined;
}
