/** The mailer's public face: the message, its outbox writes and the Mailer the outbox delivers through. */
export { MAIL_DEST, Mailer, mailWrites } from './mailer.js';
export type { MailMessage } from './mailer.js';
