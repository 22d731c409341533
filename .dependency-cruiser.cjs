/**
 * The arrows of the architecture, one rule by folder (npm run lint:deps, run by .ci/run).
 *
 * Every folder of src/ is a service folder (its domain, its routes, its one module.ts) and is
 * guarded without being named here, except the platform folders: hub (the transport), compose (the
 * composition root), store (the Store port and its adapters), bus (the Bus's history) and workers
 * (the task pool and queue adapters). The files at the top of src/ (errors, clock, text, config,
 * log, bus, outbox, idempotency...) are the platform every service may use.
 *
 * A service folder may import:
 * - the platform: the files at the top of src/ (src/contract.ts among them: defineService, the
 *   Platform, the Ports each service declares for itself), src/bus/, the Store port and codecs
 *   (src/store/port.ts, src/store/codec.ts);
 * - of the hub, only its route-declaration face, src/hub/declare.ts;
 * - another service only through that service's public face, its index.ts (src/<service>/index.ts);
 * - an adapter (src/workers) only from its module.ts, the file that wires the service.
 * No service imports the composition root (src/compose: the graph and the list of services). The hub
 * imports no service and not the composition root; nothing imports in a circle.
 */
const PLATFORM_FOLDERS = '(?:hub|compose|store|bus|workers)';
/** A service folder: any folder of src/ but the platform's; the capture is the service's name. */
const SERVICE = `^src/(?!${PLATFORM_FOLDERS}/)([^/]+)/`;

module.exports = {
  forbidden: [
    {
      name: 'service-imports-hub',
      comment: 'A service declares its routes through src/hub/declare.ts; it imports no other file of src/hub (multipart, http, topics... included).',
      severity: 'error',
      from: { path: SERVICE },
      to: { path: '^src/hub/', pathNot: '^src/hub/declare\\.ts$' },
    },
    {
      name: 'service-imports-uws',
      comment: 'Sockets stay in the hub: no service imports uWebSockets.js.',
      severity: 'error',
      from: { path: SERVICE },
      to: { path: 'uWebSockets\\.js' },
    },
    {
      name: 'service-imports-store-adapter',
      comment: 'A service reaches state through the Store port: at most src/store/port.ts and the record codecs (src/store/codec.ts). A command-line tool of a service (its cli.ts, run on its own like src/main.ts) opens the store.',
      severity: 'error',
      from: { path: SERVICE, pathNot: '^src/[^/]+/cli\\.ts$' },
      to: { path: '^src/store/(?!(?:port|codec)\\.ts$)' },
    },
    {
      name: 'service-imports-composition',
      comment: 'A service takes its contract (defineService, Platform, the Ports it declares) from src/contract.ts; the composition root (the graph, the list of services) is not its business.',
      severity: 'error',
      from: { path: SERVICE },
      to: { path: '^src/compose/' },
    },
    {
      name: 'service-imports-service-internals',
      comment: "A service imports another service only through that service's public face, src/<service>/index.ts.",
      severity: 'error',
      from: { path: SERVICE },
      to: { path: `^src/(?!${PLATFORM_FOLDERS}/)[^/]+/`, pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$'] },
    },
    {
      name: 'hub-imports-service',
      comment: 'The hub knows no service and not the composition root: service modules register on it.',
      severity: 'error',
      from: { path: '^src/hub/' },
      to: { path: [`^src/(?!${PLATFORM_FOLDERS}/)[^/]+/`, '^src/compose/'] },
    },
    {
      name: 'domain-imports-adapter',
      comment: "The arrow points inward: a domain owns its interfaces (trading its tasks); src/workers adapts them (Piscina, BullMQ). Only a service's module.ts picks the adapter.",
      severity: 'error',
      from: { path: SERVICE, pathNot: '^src/[^/]+/module\\.ts$' },
      to: { path: '^src/workers/' },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
