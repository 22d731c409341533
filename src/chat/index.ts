/** The conversation's public face: what other services (demo) use of it; the rest of the folder is its own. */
export type { ChatService, TurnAnswer } from './service.js';
