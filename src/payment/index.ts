/** The payment relay's public face: what the demo and the stand-in peers use of it; the rest of the folder is its own. */
export { UNIT } from './ledger.js';
export { ChallengeLifecycle } from './lifecycle.js';
export type { Payment } from './relay.js';
export { DEFAULT_RULES, payoutWeekOf } from './rules.js';
export { PaymentService } from './service.js';
export { newWebhookSecret, startPaymentStandins } from './standins.js';
export type { PaymentStandins } from './standins.js';
