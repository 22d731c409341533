/**
 * The durable outbox: messages to external peers, written in the same atomic store update as the
 * state change that causes them, and delivered in the background. The parts live in src/outbox/:
 * records.ts (items, stored records and their codec, the enqueue writes, backoff), outbox.ts (the
 * delivery loop), holds.ts (items kept for a peer that is not configured), attempt.ts.
 */
export * from './outbox/records.js';
export { Outbox, type OutboxOptions } from './outbox/outbox.js';
