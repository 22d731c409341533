import type { Logger } from 'pino';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Hub } from '../hub/index.js';
import type { Store } from '../store/port.js';
import type { RedisTarget } from '../store/redis-connection.js';

/** What every service module is built from: the parts the composition root opens once. */
export interface Platform {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: Store;
  bus: Bus;
  /** This process's one name: the Bus origin, the rooms' relay origin, the program leases' owner. */
  processId: string;
  /** Where Redis is, when the settings name one (the trading chunk queue shares it; src/workers/queue.ts). */
  redis?: RedisTarget | undefined;
}

/**
 * One service as the hub runs it. src/app.ts keeps a list of these: it registers every module's
 * routes, starts the hub listening, then starts the modules in order; shutdown runs the list in
 * reverse, twice: `stop` before the hub closes (no new work: cancel jobs, stop timers and leases) and
 * `close` after it (flush and release what the closed sockets and requests no longer use).
 */
export interface ServiceModule {
  readonly name: string;
  /** Registers the module's routes, streams, topics, sockets and pages on the hub. */
  routes(hub: Hub): void;
  /** After the hub listens (`url`: its own address): timers, leases, delivery loops. */
  start?(listening?: { url: string }): void | Promise<void>;
  /** Before the hub stops accepting and drains. */
  stop?(): void | Promise<void>;
  /** After the hub has stopped. */
  close?(): void | Promise<void>;
}

/** Runs one phase over the modules (in reverse for stop/close); a failing module does not stop the rest. */
export async function runPhase(modules: readonly ServiceModule[], phase: 'start' | 'stop' | 'close', logger: Logger, listening = { url: '' }): Promise<void> {
  const list = phase === 'start' ? modules : [...modules].reverse();
  for (const m of list) {
    const f = m[phase];
    if (!f) continue;
    if (phase === 'start') await f.call(m, listening);
    else
      await Promise.resolve()
        .then(() => f.call(m))
        .catch((err: unknown) => logger.error({ err, module: m.name }, `module ${phase} failed`));
  }
}
