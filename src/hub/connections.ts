/**
 * The long-lived connections of this hub process as an operator sees them (the console): each
 * WebSocket (any endpoint) and SSE stream with its id, the identity behind it, where it came from,
 * when it opened and the topics it holds; and the operator's disconnect.
 *
 * A connection's id is `<node>:ws:<n>` or `<node>:sse:<n>`, where `<node>` is the hub's instance
 * name (the same name its presence entries carry), so an id says which process holds it.
 */

/** The id of one connection: `<node>:ws:<n>` or `<node>:sse:<n>`. */
export const CONNECTION_ID = /^[0-9a-f]{8}:(?:ws|sse):[1-9][0-9]{0,15}$/;

/**
 * WebSocket close code of a connection an operator ended: 4403, the application range's mirror of
 * HTTP 403 (a y-websocket client takes 4400-4499 as final and does not reconnect). When the
 * operator also revoked the identity's tokens, the close is 4401 `invalid_token`.
 */
export const WS_CLOSE_DISCONNECTED = 4403;

export interface ConnectionInfo {
  id: string;
  kind: 'ws' | 'sse';
  /** The WebSocket endpoint's pattern (`/ws`, `/yjs/:room`) or the SSE route's. */
  endpoint: string;
  /** The identity behind it; null for an anonymous connection. */
  user: string | null;
  remote_address: string;
  opened_at: string;
  /** The /ws topics it is subscribed to (other endpoints: none). */
  topics: string[];
}

/** Which connections an operator names: one by id, or every one of an identity. */
export type ConnectionFilter = { id: string } | { user: string };

/** Why an operator ends a connection: a disconnect, or the identity's tokens were revoked. */
export type DisconnectReason = 'disconnected' | 'revoked';

/** One open connection and how to end it. */
export interface HeldConnection {
  info(): ConnectionInfo;
  end(reason: DisconnectReason): void;
}

export function matches(c: ConnectionInfo, filter: ConnectionFilter): boolean {
  return 'id' in filter ? c.id === filter.id : c.user === filter.user;
}
