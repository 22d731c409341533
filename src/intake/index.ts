/** Intake's public face: what other services (rental, chat) use of it; the rest of the folder is its own. */
export { ACCESS_KEY_RE, IntakeService, K, RECEIPT_RE, newSubscriptionId, receiptIds, view } from './service.js';
export type { SubscriptionRecord, SubscriptionView } from './service.js';
export { intakeInput, normalisePhone, parseIntakeInput, type IntakeInput } from './input.js';
