import { Rooms, busTransport } from './rooms.js';
import { CollabService } from './service.js';
import { EDITOR, registerCollabRoutes } from './routes.js';
import { defineService } from '../compose/compose.js';

/** Markdown documents, presence and live co-editing over the y-websocket protocol (docs/collab.md). */
export const collabModule = defineService({
  name: 'collab',
  needs: [],
  provides: ['collab'],
  build(p) {
    const { config, store, clock, bus, logger, processId } = p;
    const service = new CollabService({ store, clock, bus, maxBytes: config.MD_MAX_BYTES, logger: logger.child({ part: 'collab' }) });
    const rooms = new Rooms({
      store,
      service,
      origin: processId,
      logger: logger.child({ part: 'rooms' }),
      debounceMs: config.MD_PERSIST_DEBOUNCE_MS,
      maxDelayMs: config.MD_PERSIST_MAX_MS,
      resyncMs: config.MD_RESYNC_MS,
      transport: busTransport(bus),
      clock,
    });
    return {
      name: 'collab',
      ports: { collab: service },
      routes(hub) {
        registerCollabRoutes(hub, { service });
        const peers = hub.peers('/yjs/:slug', {
          maxPayloadLength: config.MD_MAX_BYTES * 4 + 4096,
          auth: EDITOR,
          upgrade: ([slug], _query, who) => ({ slug: rooms.check(slug), who: who!.id }),
          open: (peer, to) => rooms.open(peer, to.slug, to.who),
          message: (peer, bytes) => rooms.message(peer, bytes),
          close: (peer) => rooms.leave(peer),
        });
        rooms.useFanout(peers);
      },
      start: () => service.start(config.MD_SWEEP_MS),
      stop: () => service.close(),
      close: () => rooms.close(),
    };
  },
});
