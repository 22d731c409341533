/**
 * The hub's route-declaration face: what a service's route module may take from the hub (the Hub
 * type it registers on, the route, stream, topic and upload declarations, Reply, validate and the
 * query helpers), and nothing of the transport behind them. A service imports this file and no
 * other file of src/hub (.dependency-cruiser.cjs, rule service-imports-hub).
 */
export type { ConnectionFilter, ConnectionInfo, DisconnectReason, Hub, RateLimitSpec, RouteGroup } from './index.js';
export { CONNECTION_ID, WS_CLOSE_DISCONNECTED } from './connections.js';
export { WS_CLOSE_INVALID_TOKEN } from './credentials.js';
export { attachment, parseClientJson, Reply, route, validate } from './http.js';
export type { AuthSpec, BodyReader, Declared, Guard, IdempotencySpec, IdempotentRun, Mounted, MountPath, Principal, RequestContext, RouteDef, RouteTable } from './http.js';
export type { SseStream } from './sse.js';
export type { BusSseDef } from './sse-route.js';
export type { StoredUpload, UploadedFile, UploadKeeper } from './upload-files.js';
export type { TopicSpec, TopicVerdict } from './topics.js';
export { appearsWithin } from './topics.js';
export { qDecimal, qInt, qText } from './query.js';
