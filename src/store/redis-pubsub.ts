import type { Unsubscribe } from './port.js';
import type { RedisClient } from './redis-connection.js';

/**
 * The Redis adapter's pub/sub: one subscriber connection, handlers grouped by channel; SUBSCRIBE and
 * UNSUBSCRIBE run one after the other so a channel's state on the server follows its handlers. On a
 * cluster a sharded channel is SSUBSCRIBEd (ioredis keeps one subscriber connection per master and
 * subscribes again where a slot moves), any other SUBSCRIBEd.
 */
export class RedisPubSub {
  private readonly channels = new Map<string, Set<{ handler: (message: string) => void }>>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly sub: RedisClient,
    /** Whether the store is closed (then nothing is unsubscribed on the server). */
    private readonly isClosed: () => boolean,
    /** Tracks an operation so that close() waits for it. */
    private readonly track: <T>(p: Promise<T>) => Promise<T>,
    sharding = false,
  ) {
    const receive = (channel: string, message: string) => {
      const subs = this.channels.get(channel);
      if (!subs) return;
      for (const s of [...subs]) {
        try {
          s.handler(message);
        } catch {
          // one faulty handler must not stop delivery to the others
        }
      }
    };
    sub.on('message', receive);
    if (sharding) sub.on('smessage', receive);
  }

  private serial<T>(job: () => Promise<T>): Promise<T> {
    const next = this.chain.then(job);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** `channel` is the full channel name (prefix included). */
  async subscribe(channel: string, handler: (message: string) => void, sharded = false): Promise<Unsubscribe> {
    const entry = { handler };
    await this.serial(async () => {
      if (this.isClosed()) throw new Error('store is closed');
      const existing = this.channels.get(channel);
      if (existing) {
        existing.add(entry);
        return;
      }
      this.channels.set(channel, new Set([entry]));
      try {
        if (sharded) await this.sub.ssubscribe(channel);
        else await this.sub.subscribe(channel);
      } catch (err) {
        this.channels.delete(channel);
        throw err;
      }
    });
    let done = false;
    return () => {
      if (done) return Promise.resolve();
      done = true;
      return this.track(
        this.serial(async () => {
          const subs = this.channels.get(channel);
          if (!subs || !subs.delete(entry) || subs.size > 0) return;
          this.channels.delete(channel);
          if (!this.isClosed()) await (sharded ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel)).catch(() => undefined);
        }),
      );
    };
  }

  clear(): void {
    this.channels.clear();
  }
}
