import { AppError } from '../errors.js';
import { settingsSchema } from './engine.js';
import type { CreateInput, ProgramEvent } from './program-model.js';
import type { ProgramService } from './programs.js';

/**
 * The port through which another service runs live programs of its own (the payment relay runs each
 * bought challenge as one, docs/payment.md "Challenges"), provided by the trading module as
 * `livePrograms` (declared in src/trading/module.ts): name a program before it exists (the caller
 * records the id in its own atomic update, with an outbox item whose delivery calls `ensure`: the
 * program is its own aggregate, docs/partitions.md), create and start it once, and follow every
 * program's events as this process receives them from the Bus (published by any process).
 */
export interface LivePrograms {
  /** The id a program to be created will have. */
  newId(): string;
  /**
   * Creates the program `id` on an account of the spec's capital and daily loss limit (the engine's
   * defaults for every other setting) unless it is there, and starts it if it was never started:
   * called again (a retried delivery, a second process) it changes nothing.
   */
  ensure(id: string, spec: ProgramSpec): Promise<void>;
  /** Calls `listener` with every program event delivered from now on; returns the unsubscribe. */
  follow(listener: (event: ProgramEvent) => void): () => void;
}

/** A program to create: its strategy, symbol and parameters, and the account it trades. */
export interface ProgramSpec extends Omit<CreateInput, 'settings'> {
  capital: number;
  daily_loss_limit: number;
}

export function livePrograms(service: ProgramService): LivePrograms {
  return {
    newId: () => service.newId(),
    ensure: async (id, { capital, daily_loss_limit, ...program }) => {
      await service.createAs(id, { ...program, settings: settingsSchema.parse({ capital, daily_loss_limit }) });
      if ((await service.get(id)).state !== 'created') return;
      // two deliveries at once: one starts it, the other finds it started
      await service.move(id, 'start').catch((err: unknown) => {
        if (!(err instanceof AppError && err.code === 'invalid_state')) throw err;
      });
    },
    follow: (listener) => service.follow(listener),
  };
}
