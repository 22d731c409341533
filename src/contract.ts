import type { Logger } from 'pino';
import type { Bus } from './bus.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Hub } from './hub/declare.js';
import type { Store } from './store/port.js';
import type { RedisTarget } from './store/redis-connection.js';

/**
 * The service contract, on the platform's ground floor: what a service is (`defineService`), what it
 * is built from (`Platform`), what the hub runs of it (`ServiceModule`) and the ports services offer
 * each other (`Ports`). The composition root (src/compose/) builds the graph from these; a service
 * imports them from here and nothing of src/compose.
 *
 * `Ports` is empty here: each service declares the ports it provides in its own module.ts, by
 * augmenting this interface, beside the definition that builds them:
 *
 *   declare module '../contract.js' {
 *     interface Ports { tickets: TicketService }
 *   }
 *
 * so a new port is one service's change. A name two services declare with different types does not
 * compile; a port two services provide, or one nobody provides, is refused by compose().
 */

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Ports {}

/** A port's name: what one service offers the others. */
export type PortName = keyof Ports;

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

/** A service as the composition root sees it: what it needs of others, what it provides, how it is built. */
export interface ServiceDefinition<N extends PortName = PortName, P extends PortName = PortName> {
  readonly name: string;
  /** The ports of other services this one is built from (by name; the providers are found by the graph). */
  readonly needs: readonly N[];
  /** The ports this service offers, built by `build`. */
  readonly provides: readonly P[];
  /** Whether this process runs the service at all (default: always). */
  enabled?(platform: Platform): boolean;
  build(platform: Platform, needs: Pick<Ports, N>): Built<P> | Promise<Built<P>>;
}

/** A built service: the module the hub runs and the ports it provides. */
export type Built<P extends PortName> = ServiceModule & { readonly ports: Pick<Ports, P> };

/** The one way to write a definition (it keeps the needs and provides types precise). */
export function defineService<N extends PortName = never, P extends PortName = never>(d: ServiceDefinition<N, P>): ServiceDefinition<N, P> {
  return d;
}
