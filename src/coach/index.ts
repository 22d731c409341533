/** Coaching's public face: what other services (demo) use of it; the rest of the folder is its own. */
export { signOwner } from './owner-id.js';
export type { ActionStatus, CoachService, OwnerInput } from './service.js';
