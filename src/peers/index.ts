/**
 * The peers' public face: the HTTP client services call their external peers with, and the parts a
 * stand-in server is built from (src/payment/standins.ts builds the payment relay's on them).
 */
export { PeerError, parseJsonText, peerJson, peerRequest, statusError, tcpHttpRequest } from './http-client.js';
export type { CallOptions, PeerRequest, RawHttpResponse, TcpHttpRequest } from './http-client.js';
export { HttpError, readJsonBody, routeMiss, startStandin } from './value-standin.js';
export type { Standin, StandinOptions } from './value-standin.js';
