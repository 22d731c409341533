import { DEMO_ACCOUNTS, seedDemo, type DemoSummary } from './seed.js';
import { DemoSignIn } from './sign-in.js';
import { registerDemo } from './routes.js';
import { defineService } from '../contract.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    /** DEMO=1 only: what the demo seeded (the start banner prints it). */
    demo: DemoSummary;
  }
}

/**
 * DEMO=1 only: the demo data of all eight services, seeded through the services once they run (the
 * programs' market and the payment stand-ins included, the hub listening for the bank's webhook),
 * the /demo tour with its signed-in links, and GET /api/demo (src/demo/seed.ts, src/demo/).
 */
export const demoModule = defineService({
  name: 'demo',
  needs: ['auth', 'tickets', 'reward', 'collab', 'programs', 'rental', 'rentalFiles', 'chat', 'coach', 'payment'],
  provides: ['demo'],
  enabled: (p) => p.config.DEMO,
  build(p, { rentalFiles, ...parts }) {
    // filled at start; the demo routes and the start banner read it
    const summary = {} as DemoSummary;
    const signIn = new DemoSignIn({
      store: p.store,
      clock: p.clock,
      auth: parts.auth,
      users: DEMO_ACCOUNTS.map((a) => a.user),
      password: () => summary.password,
    });
    return {
      name: 'demo',
      ports: { demo: summary },
      routes: (hub) => registerDemo(hub, summary, signIn),
      async start(listening) {
        const local = listening?.url ?? '';
        const url = p.config.PUBLIC_URL?.replace(/\/+$/, '') ?? local;
        const coachSecret = p.config.COACH_OWNER_SECRET ? { coachSecret: p.config.COACH_OWNER_SECRET } : {};
        Object.assign(summary, await seedDemo({ store: p.store, blobs: rentalFiles, ...parts, ...coachSecret }, { url, local }), { tour_key: signIn.key });
      },
    };
  },
});
