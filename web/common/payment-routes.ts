/**
 * The payment relay's routes as the pages' client reads them: the relay's own table, as
 * src/payment/routes.ts returns it from `hub.mount(TOKEN_API, {...})` (types only: nothing of it
 * reaches a page's bundle).
 */
export type { PaymentRoutes } from '../../src/payment/routes.js';
