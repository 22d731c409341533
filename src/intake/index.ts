/**
 * Intake's public face: what other services (rental, chat) use of it; the rest of the folder is its
 * own, its store keys included (a service asks IntakeService: byReceipt, count, modify...).
 */
export { ACCESS_KEY_RE, IntakeService, RECEIPT_RE, newSubscriptionId, recordKey, subscriptionIdFor, SUBSCRIPTION_ID_RE, view } from './service.js';
export type { SubscriptionRecord, SubscriptionView } from './service.js';
export { intakeInput, normalisePhone, parseIntakeInput, type IntakeInput } from './input.js';
