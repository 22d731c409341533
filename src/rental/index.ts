/** Rental's public face: what other services (chat, demo) use of it; the rest of the folder is its own. */
export { IPA_BASE_FEE, PRODUCTS, TERM_MONTHS } from './catalog.js';
export type { DocType } from './catalog.js';
export type { StoredFile } from './files.js';
export type { Actor, RentalService } from './service.js';
