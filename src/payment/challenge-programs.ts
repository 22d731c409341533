import type { Logger } from 'pino';
import type { Store, Write } from '../store/port.js';
import type { LivePrograms, ProgramEvent } from '../trading/index.js';
import type { ChallengeLifecycle, EngineEvent } from './lifecycle.js';
import type { ChallengeProgramPort } from './service.js';

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

  /** The program a new challenge runs: its id, and the writes that create it and point it at the challenge. */
  async plan(challenge: string, accountSize: number): Promise<{ program: string; writes: Write[] }> {
    const { programs, dailyLoss } = this.o;
    const p = await programs.draft({ name: `challenge ${challenge}`, strategy: 'ema_cross', symbol: 'ES', params: {}, capital: accountSize, daily_loss_limit: Math.round(accountSize * dailyLoss) });
    return { program: p.id, writes: [...p.writes, { op: 'set', key: PROGRAM_CHALLENGE(p.id), value: challenge }] };
  }

  /** Starts a planned program once the purchase that created it is committed. */
  start(program: string): Promise<void> {
    return this.o.programs.start(program);
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
