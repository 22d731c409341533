/**
 * The Hocuspocus peer of bench/collab: `@hocuspocus/server` as its documentation starts it, with no
 * extension (documents in memory, as the reference y-websocket server's default), on HOST:PORT.
 *
 *   HOST=127.0.0.1 PORT=1234 node dist/bench/hocuspocus-server.js
 */
import { Server } from '@hocuspocus/server';

const server = new Server({ address: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 1234), quiet: true });
await server.listen();
