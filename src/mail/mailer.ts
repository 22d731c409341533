import nodemailer, { type Transporter } from 'nodemailer';
import type { Clock } from '../clock.js';
import { outboxWrites, type Deliver } from '../outbox.js';
import { codec, decodeList } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';

/**
 * Mail: written into the durable outbox in the same atomic store update as the change that causes
 * it, and sent in the background by the outbox's `mail` deliverer, so a dead mail server delays
 * mail and never fails or slows a request.
 *
 * With SMTP_URL set, the deliverer sends through nodemailer (SMTP); the outbox item id becomes the
 * Message-ID, so a repeated delivery is recognisable. Without SMTP_URL, mails are kept in the store
 * (a capped list, each id once) and listed for the operator (GET /api/mail).
 */

export const MAIL_DEST = 'mail';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface KeptMail extends MailMessage {
  id: string;
  /** When the outbox handed it over (ISO). */
  at: string;
}

const K = {
  kept: 'mail:kept',
  keptId: (id: string) => `mail:kept:${id}`,
} as const;
export const KEPT_CAP = 10_000;
const messages = codec<MailMessage>('mail', (r) => typeof r.subject === 'string');
const keptMails = codec<KeptMail>('kept mail', (r) => typeof r.id === 'string' && typeof r.subject === 'string');

/** The writes that queue one mail; `id` must be unique and stable (e.g. `rental:<id>:receipt`). */
export function mailWrites(id: string, message: MailMessage, createdAt: number): Write[] {
  return outboxWrites({ id: `mail:${id}`, dest: MAIL_DEST, payload: messages.encode(message), createdAt });
}

export interface MailerOptions {
  store: Store;
  clock: Clock;
  /** smtp://user:pass@host:port (or smtps://); unset: keep mails for the operator. */
  smtpUrl?: string;
  from: string;
  /** Socket time-outs for one SMTP conversation (ms). */
  timeoutMs?: number;
}

export class Mailer {
  private readonly transport: Transporter | undefined;

  constructor(private readonly opts: MailerOptions) {
    const t = opts.timeoutMs ?? 10_000;
    this.transport = opts.smtpUrl
      ? nodemailer.createTransport({ url: opts.smtpUrl, connectionTimeout: t, greetingTimeout: t, socketTimeout: t })
      : undefined;
  }

  /** Whether mails are sent (SMTP_URL) or kept for the operator. */
  get sending(): boolean {
    return this.transport !== undefined;
  }

  /** The outbox deliverer for MAIL_DEST. */
  readonly deliver: Deliver = async (item, signal) => {
    const msg = parseMessage(item.payload);
    if (!msg) throw new Error(`mail ${item.id} has no recipient, subject or text`);
    if (!this.transport) return this.keep(item.id, msg);
    const domain = this.opts.from.split('@')[1]?.replace(/>.*$/, '') || 'maru.local';
    const send = this.transport.sendMail({
      from: this.opts.from,
      to: msg.to,
      subject: msg.subject,
      text: msg.text,
      html: msg.html,
      messageId: `<${item.id.replace(/[^\w.-]/g, '.')}@${domain}>`,
    });
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('mail delivery aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      send.then(
        () => resolve(),
        (err: unknown) => reject(err),
      ).finally(() => signal.removeEventListener('abort', onAbort));
    });
  };

  /** Kept mails (no SMTP_URL), newest first. */
  async kept(limit = 100): Promise<KeptMail[]> {
    const list = await this.opts.store.range<Json>(K.kept, -Math.max(1, limit), -1);
    return decodeList(keptMails, list).reverse();
  }

  private async keep(id: string, msg: MailMessage): Promise<void> {
    const entry: KeptMail = { id, at: new Date(this.opts.clock.now()).toISOString(), ...msg };
    await this.opts.store.update([K.keptId(id)], ([seen]) =>
      seen !== undefined
        ? { writes: [], result: undefined }
        : {
            writes: [
              { op: 'set', key: K.keptId(id), value: true, ttlMs: 30 * 86_400_000 },
              { op: 'push', key: K.kept, value: keptMails.encode(entry), cap: KEPT_CAP },
            ],
            result: undefined,
          },
    );
  }

  close(): void {
    this.transport?.close();
  }
}

function parseMessage(payload: Json): MailMessage | undefined {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
  const { to, subject, text, html } = payload;
  if (typeof to !== 'string' || typeof subject !== 'string' || typeof text !== 'string') return undefined;
  return typeof html === 'string' ? { to, subject, text, html } : { to, subject, text };
}
