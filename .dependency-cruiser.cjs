/**
 * The arrows of the architecture, enforced (npm run lint:deps, run by .ci/run):
 * services know no sockets and no hub; route modules know no store adapter and no other route
 * module; the hub knows no service; nothing imports in a circle.
 *
 * Every folder of src/ is a service or a platform part of one (intake, uploads, blobs, mail,
 * outbox, peers, bus, demo, a new one) and is guarded without being named here, except the
 * transport and composition folders: hub (the transport), http (route modules), modules (what
 * each service plugs in), store (the Store port and its adapters).
 */
const SERVICES = '^src/(?!(hub|http|modules|store)/)[^/]+/';

module.exports = {
  forbidden: [
    {
      name: 'service-imports-hub',
      comment: 'A service plugs into the hub through its route module; it never imports src/hub.',
      severity: 'error',
      from: { path: SERVICES },
      to: { path: '^src/hub/' },
    },
    {
      name: 'service-imports-uws',
      comment: 'Sockets stay in the hub: no service imports uWebSockets.js.',
      severity: 'error',
      from: { path: SERVICES },
      to: { path: 'uWebSockets\\.js' },
    },
    {
      name: 'route-imports-store-adapter',
      comment: 'Route modules reach state through services; at most the Store port type and the record codecs.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/store/(?!(port|codec)\\.ts$)' },
    },
    {
      name: 'route-imports-route',
      comment: 'Route modules do not import one another; shared rules live in the domain (or http/query.ts, *-schemas.ts).',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/http/', pathNot: '^src/http/(query\\.ts|[\\w-]+-schemas\\.ts)$' },
    },
    {
      name: 'hub-imports-service',
      comment: 'The hub knows no service: route modules register on it.',
      severity: 'error',
      from: { path: '^src/hub/' },
      to: { path: [SERVICES, '^src/http/'] },
    },
    {
      name: 'domain-imports-adapter',
      comment: 'The arrow points inward: the trading domain owns its task interface; src/workers adapts it (Piscina).',
      severity: 'error',
      from: { path: '^src/trading/' },
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
