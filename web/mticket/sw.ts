/**
 * The ticket page's service worker (served as /mticket-sw.js, scope /mticket/): network first, and
 * when the network is gone the copy of the last ticket this phone showed (page, ticket data,
 * scripts, styles and the font files its text used). Only one ticket is kept: caching another replaces
 * its page and data (the font files stay, shared by every ticket).
 */
import { network } from '../common/api.js';
interface ExtendableEvent extends Event { waitUntil(p: Promise<unknown>): void }
interface FetchEvent extends ExtendableEvent { request: Request; respondWith(r: Promise<Response> | Response): void }
interface MessageEvt extends ExtendableEvent { data: unknown; source: { postMessage(m: unknown): void } | null }
interface SwScope {
  addEventListener(type: 'install' | 'activate', fn: (e: ExtendableEvent) => void): void;
  addEventListener(type: 'fetch', fn: (e: FetchEvent) => void): void;
  addEventListener(type: 'message', fn: (e: MessageEvt) => void): void;
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  location: Location;
}
const sw = self as unknown as SwScope;
const CACHE = 'maru-mticket-v1';
const TICKET_PATHS = /^\/(api\/)?mticket\//;

sw.addEventListener('install', (e) => e.waitUntil(sw.skipWaiting()));
sw.addEventListener('activate', (e) => e.waitUntil(sw.clients.claim()));

/** The page tells which URLs make up the ticket it shows; they replace the previous ticket's. */
sw.addEventListener('message', (e) => {
  const msg = e.data as { type?: string; urls?: unknown };
  if (msg?.type !== 'keep' || !Array.isArray(msg.urls)) return;
  const urls = msg.urls.filter((u): u is string => typeof u === 'string' && u.startsWith('/')).slice(0, 64); // the page, its data, scripts and styles, and up to 40 font files
  e.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      for (const req of await cache.keys()) {
        const path = new URL(req.url).pathname;
        if (TICKET_PATHS.test(path) && !urls.includes(path)) await cache.delete(req);
      }
      await cache.addAll(urls);
      e.source?.postMessage({ type: 'kept', urls });
    })(),
  );
});

sw.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== sw.location.origin) return;
  if (!TICKET_PATHS.test(url.pathname) && !url.pathname.startsWith('/assets/')) return;
  e.respondWith(
    network(e.request).catch(async () => (await caches.match(e.request, { ignoreSearch: true })) ?? Response.error()),
  );
});
