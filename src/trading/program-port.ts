import type { Write } from '../store/port.js';
import { settingsSchema } from './engine.js';
import type { CreateInput, ProgramEvent } from './program-model.js';
import type { ProgramService } from './programs.js';

/**
 * The port through which another service runs live programs of its own (the payment relay runs each
 * bought challenge as one, docs/payment.md "Challenges"), provided by the trading module as
 * `livePrograms` (src/compose/ports.ts): draft a program on an account of a given capital and daily
 * loss limit (the engine's defaults for every other setting) as writes for the caller's own atomic
 * update, start it once they are committed, and follow every program's events as this process
 * receives them from the Bus (published by any process). The caller keeps its own record of which
 * program is its, in the same update.
 */
export interface LivePrograms {
  /** A new program's id and the writes that create it (state `created`), for the caller's update. */
  draft(spec: ProgramSpec): Promise<{ id: string; writes: Write[] }>;
  /** Starts a created program (its writes committed). */
  start(id: string): Promise<void>;
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
    draft: async ({ capital, daily_loss_limit, ...program }) => {
      const { program: p, writes } = await service.draft({ ...program, settings: settingsSchema.parse({ capital, daily_loss_limit }) });
      return { id: p.id, writes };
    },
    start: async (id) => void (await service.move(id, 'start')),
    follow: (listener) => service.follow(listener),
  };
}
