/** Identity's public face: what other services (demo) use of it; the rest of the folder is its own. */
export type { AuthService, Role } from './service.js';
export { PARTNER_USER } from './service.js';
export type { SignInAttempt, SignIns } from './sign-ins.js';
