import type { AuthSpec, Principal } from './http.js';
import type { SocketData } from './topics.js';
import type { WebSocket } from './uws.js';

/** One binary-protocol connection as a service sees it: bytes out, and a way to end it. */
export interface SocketPeer {
  send(bytes: Uint8Array): void;
  close(code: number, reason: string): void;
}

/**
 * Native fan-out to groups of peers (uWS pub/sub: one C++ loop per message instead of one send per
 * peer from JavaScript). `publish` reaches every peer of the group but `except`.
 */
export interface PeerGroups {
  join(peer: SocketPeer, group: string): void;
  publish(group: string, bytes: Uint8Array, except?: SocketPeer): void;
}

/**
 * A binary WebSocket endpoint whose connections are handed to a service as SocketPeers, so the
 * service knows no sockets (e.g. the y-websocket rooms of src/collab on /yjs/:slug).
 */
export interface PeerEndpoint<D> {
  description?: string;
  maxPayloadLength?: number;
  /** The credential an upgrade needs (`access_token` query parameter or Authorization header). */
  auth?: AuthSpec;
  /** Validates the path parameters (throw an AppError to refuse with its status); `identity` when `auth` is declared. */
  upgrade(params: string[], query: string, identity?: Principal): D | Promise<D>;
  open(peer: SocketPeer, data: D): void;
  message(peer: SocketPeer, bytes: Uint8Array): void;
  close(peer: SocketPeer): void;
}

interface PeerData<D> {
  peer?: SocketPeer;
  data: D;
}

const sockets = new WeakMap<SocketPeer, WebSocket<SocketData>>();

/** Groups over uWS topics; `appPublish` is the app-wide publish (Hub.socket's handle). */
export function peerGroups(appPublish: (topic: string, bytes: Uint8Array) => void): PeerGroups {
  return {
    join(peer, group) {
      const ws = sockets.get(peer);
      if (ws && !ws.getUserData().closed) ws.subscribe(group);
    },
    publish(group, bytes, except) {
      const ws = except && sockets.get(except);
      if (ws && !ws.getUserData().closed) ws.publish(group, bytes, true);
      else appPublish(group, bytes);
    },
  };
}

/** The uWS side of a PeerEndpoint, for Hub.socket. */
export function peerBehaviour<D>(ep: PeerEndpoint<D>) {
  type W = WebSocket<SocketData & PeerData<D>>;
  const peerOf = (ws: W): SocketPeer => {
    const d = ws.getUserData();
    if (d.peer) return d.peer;
    d.peer = {
      send: (bytes) => {
        if (!d.closed) ws.send(bytes, true);
      },
      close: (code, reason) => {
        if (d.closed) return;
        d.closed = true;
        ws.end(code, reason);
      },
    };
    sockets.set(d.peer, ws as unknown as WebSocket<SocketData>);
    return d.peer;
  };
  return {
    description: ep.description,
    maxPayloadLength: ep.maxPayloadLength,
    auth: ep.auth,
    upgrade: async (params: string[], query: string, identity?: Principal): Promise<PeerData<D>> => ({ data: await ep.upgrade(params, query, identity) }),
    open: (ws: W) => ep.open(peerOf(ws), ws.getUserData().data),
    // uWS reuses the message's memory after this call returns: copy it
    message: (ws: W, message: ArrayBuffer) => ep.message(peerOf(ws), new Uint8Array(message.slice(0))),
    close: (ws: W) => ep.close(peerOf(ws)),
  };
}
