/** The reward plan's public face: what other services (outbox, payment, the stand-ins, demo) use of it; the rest of the folder is its own. */
export { ledgerEntryHash, rewardPeerDeliverers } from './peers.js';
export type { VerifyResult } from './peers.js';
export type { RewardService } from './service.js';
