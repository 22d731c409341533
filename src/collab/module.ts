import { Rooms, busTransport } from './rooms.js';
import { CollabService } from './service.js';
import { registerCollabRoutes } from './routes.js';
import { viewerOf } from './access.js';
import { LINK_PREFIX } from './links.js';
import { AppError } from '../errors.js';
import { openBlobStore } from '../blobs/index.js';
import { ClamdScanner } from '../uploads/index.js';
import { DocImages, MAX_IMAGE_BYTES } from './images.js';
import { defineService } from '../contract.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    collab: CollabService;
  }
}

/** Markdown documents, presence and live co-editing over the y-websocket protocol (docs/collab.md). */
export const collabModule = defineService({
  name: 'collab',
  // the accounts a comment may mention (comments.ts)
  needs: ['auth'],
  provides: ['collab'],
  async build(p, { auth }) {
    const { config, store, clock, bus, logger, processId } = p;
    const service = new CollabService({ store, clock, bus, maxBytes: config.MD_MAX_BYTES, logger: logger.child({ part: 'collab' }) });
    // images of documents: the hub's upload pipeline, their own area of the blob store (images.ts)
    const images = new DocImages({
      store,
      blobs: await openBlobStore(config, 'md-images'),
      clock,
      graceMs: config.BLOB_ORPHAN_GRACE_MS,
      maxBytes: Math.min(MAX_IMAGE_BYTES, config.UPLOAD_MAX_BYTES),
      scanner: config.CLAMD_URL ? new ClamdScanner(config.CLAMD_URL, { timeoutMs: config.CLAMD_TIMEOUT_MS }) : undefined,
    });
    const collect = () =>
      void images
        .collect((slug) => service.texts(slug))
        .then(() => images.sweepBlobs())
        .catch((err) => logger.warn({ err }, 'document image collection failed'));
    let collector: NodeJS.Timeout | undefined;
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
        // a document's share link is a bearer token of its own (links.ts), read wherever the hub reads one
        hub.tokenKind(LINK_PREFIX, (token) => service.links.authenticate(token));
        registerCollabRoutes(hub, {
          service,
          images,
          anchors: rooms,
          accounts: async (id) => {
            const a = await auth.account(id).catch(() => undefined);
            return a && { id: a.user, name: a.name, roles: a.roles, disabled: a.disabled, email: a.email };
          },
        });
        const peers = hub.peers('/yjs/:slug', {
          maxPayloadLength: config.MD_MAX_BYTES * 4 + 4096,
          // an editor's token, or a share link (read-only); the document's access decides (access.ts)
          auth: { optional: true },
          upgrade: async ([raw], _query, identity) => {
            const slug = rooms.check(raw);
            const viewer = viewerOf(identity);
            if (!viewer) throw new AppError('unauthorized', 'unauthorized', 'live co-editing needs a bearer token (access_token) of an editor or a share link');
            if (!viewer.link && !viewer.roles.includes('editor') && !viewer.roles.includes('operator')) {
              throw new AppError('forbidden', 'forbidden', 'this route needs the role editor', { needs: ['editor'], has: viewer.roles });
            }
            const can = await service.rightsOf(slug, viewer);
            if (!can.read) throw new AppError('forbidden', 'forbidden', `you may not read ${slug}`, { slug, needs: 'read' });
            return { slug, who: viewer.id, viewer, readOnly: !can.write };
          },
          open: (peer, to) => rooms.open(peer, to.slug, to.who, { viewer: to.viewer, readOnly: to.readOnly }),
          message: (peer, bytes) => rooms.message(peer, bytes),
          close: (peer) => rooms.leave(peer),
        });
        rooms.useFanout(peers);
        // who loses read access to a document loses its topic too (an `unsubscribed` frame)
        service.onAccessChanged((slug) => void hub.reauthorize(`md:${slug}`).catch((err) => logger.warn({ err, slug }, 'document topic not re-judged')));
      },
      start: () => {
        service.start(config.MD_SWEEP_MS);
        // images nothing names any more, past their grace time (docs/collab.md "Images")
        collector = setInterval(collect, Math.max(config.MD_SWEEP_MS, Math.min(config.BLOB_ORPHAN_GRACE_MS / 4, 60_000)));
        collector.unref();
      },
      stop: () => {
        clearInterval(collector);
        service.close();
      },
      close: () => rooms.close(),
    };
  },
});
