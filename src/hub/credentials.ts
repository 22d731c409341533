import { AppError } from '../errors.js';
import type { AuthGate } from './auth.js';

/**
 * Connections that outlive the check of their credential (WebSockets, SSE streams) are checked
 * again while they stay open: a token that no longer resolves (logged out, expired, revoked by a
 * change of the account, a revoked device) ends every connection opened with it: a WebSocket closes
 * with 4401 `invalid_token`, an SSE stream gets a `closed` event with the error body and ends. A look-up that
 * fails for another reason (the store does not answer) ends nothing: the next round tries again.
 */

/**
 * WebSocket close code of a connection whose token stopped being valid: 4401, the application range's
 * mirror of HTTP 401 (as graphql-ws uses it), which y-websocket's client takes as final (it does
 * not reconnect on 4400-4499).
 */
export const WS_CLOSE_INVALID_TOKEN = 4401;

/** An open connection and the token it was opened (or authenticated) with. */
export interface HeldCredential {
  readonly token: string;
  /** Ends the connection, telling the client why. */
  end(): void;
}

/** Checks each distinct token once; ends the connections of those that no longer resolve. Returns how many ended. */
export async function recheckCredentials(auth: AuthGate, held: Iterable<HeldCredential>): Promise<number> {
  const byToken = new Map<string, HeldCredential[]>();
  for (const h of held) {
    const list = byToken.get(h.token);
    if (list) list.push(h);
    else byToken.set(h.token, [h]);
  }
  let ended = 0;
  for (const [token, conns] of byToken) {
    try {
      await auth.resolve(token);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'invalid_token')) continue;
      for (const c of conns) {
        c.end();
        ended++;
      }
    }
  }
  return ended;
}
