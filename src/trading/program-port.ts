import { settingsSchema } from './engine.js';
import type { CreateInput, ProgramEvent } from './program-model.js';
import type { ProgramService } from './programs.js';

/**
 * The port through which another service runs live programs of its own (the payment relay runs each
 * bought challenge as one, docs/payment.md "Challenges"), provided by the trading module as
 * `livePrograms` (src/compose/ports.ts): create a program on an account of a given capital and daily
 * loss limit (the engine's defaults for every other setting), start it, and follow every program's
 * events as this process receives them from the Bus (published by any process). The caller keeps
 * its own record of which program is its.
 */
export interface LivePrograms {
  create(spec: ProgramSpec): Promise<{ id: string }>;
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
    create: ({ capital, daily_loss_limit, ...program }) => service.create({ ...program, settings: settingsSchema.parse({ capital, daily_loss_limit }) }),
    start: async (id) => void (await service.move(id, 'start')),
    follow: (listener) => service.follow(listener),
  };
}
