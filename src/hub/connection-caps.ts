import { AppError } from '../errors.js';

/** Open WebSockets and SSE streams one client may hold at once (0: no limit). */
export interface ConnectionCapSettings {
  /** Per remote address. */
  perAddress: number;
  /** Per signed-in identity (its id), whatever the address. */
  perIdentity: number;
}

/** Seconds a refused client is told to wait (Retry-After): a connection of its own must end first. */
const RETRY_AFTER_S = 5;

/**
 * The count of long-lived connections (WebSockets of every endpoint, SSE streams) per remote address
 * and per identity, shared by both kinds. `acquire` takes a slot or throws 429
 * `too_many_connections`; the release it returns gives it back (once, whatever how often it is
 * called). A key whose count drops to zero is removed, so the maps hold only clients that have a
 * connection open.
 */
export class ConnectionCaps {
  private readonly byAddress = new Map<string, number>();
  private readonly byIdentity = new Map<string, number>();

  constructor(private readonly settings: ConnectionCapSettings) {}

  /** Takes a slot for `address` (and `identity` when signed in); throws 429 past either cap. */
  acquire(address: string, identity: string | undefined): () => void {
    const { perAddress, perIdentity } = this.settings;
    const a = this.byAddress.get(address) ?? 0;
    if (perAddress > 0 && a >= perAddress) throw tooMany('address', perAddress);
    if (identity !== undefined) {
      const i = this.byIdentity.get(identity) ?? 0;
      if (perIdentity > 0 && i >= perIdentity) throw tooMany('identity', perIdentity);
      this.byIdentity.set(identity, i + 1);
    }
    this.byAddress.set(address, a + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.byAddress, address);
      if (identity !== undefined) decrement(this.byIdentity, identity);
    };
  }

  /**
   * Moves an open connection's slot to an identity it authenticated as after opening (a /ws `auth`
   * frame): throws 429 when that identity is at its cap. Returns the release of the identity slot.
   */
  acquireIdentity(identity: string): () => void {
    const { perIdentity } = this.settings;
    const i = this.byIdentity.get(identity) ?? 0;
    if (perIdentity > 0 && i >= perIdentity) throw tooMany('identity', perIdentity);
    this.byIdentity.set(identity, i + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.byIdentity, identity);
    };
  }

  /** Clients holding at least one connection (for tests and metrics): addresses and identities. */
  get size(): { addresses: number; identities: number } {
    return { addresses: this.byAddress.size, identities: this.byIdentity.size };
  }
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 0) - 1;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

const tooMany = (per: 'address' | 'identity', limit: number) =>
  new AppError('rate_limited', 'too_many_connections', `at most ${limit} WebSocket and SSE connections per ${per} may be open at once; close one first`, {
    per,
    limit,
    retry_after_s: RETRY_AFTER_S,
  });
