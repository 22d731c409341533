/** The console's public face: nothing another service uses yet beyond its types. */
export type { ConsoleState } from './service.js';
