import nodemailer, { type Transporter } from 'nodemailer';
import type { Clock } from '../clock.js';
import { outboxWrites, type Deliver } from '../outbox.js';
import { codec, decodeList } from '../store/codec.js';
import { PARTITIONS, partitionKey, partitionKeys, partitionOf, type Json, type Store, type Write } from '../store/port.js';

/**
 * Mail: written into the durable outbox in the same atomic store update as the change that causes
 * it, and sent in the background by the outbox's `mail` deliverer, so a dead mail server delays
 * mail and never fails or slows a request.
 *
 * With SMTP_URL set, the deliverer sends through nodemailer (SMTP); the outbox item id becomes the
 * Message-ID, so a repeated delivery is recognisable. Without SMTP_URL, mails are kept in the store
 * (each id once, in a capped list per partition, merged on read) and listed for the operator
 * (GET /api/mail).
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
  /** The kept mails of partition p (capped list, oldest first), beside the marker of each. */
  kept: (p: number) => partitionKey('mail:kept', p),
  /** The global list of before the partitions: still read. */
  keptGlobal: 'mail:kept',
  /** A kept mail's marker (its id its aggregate, so kept mails spread over the partitions). */
  keptId: (id: string) => `mail:kept:{${id}}`,
  /** The marker of before the partitions: still looked at, so a mail kept then is not kept twice. */
  keptIdGlobal: (id: string) => `mail:kept:${id}`,
} as const;
/** About this many kept mails in all: each partition's list keeps its share. */
export const KEPT_CAP = 10_000;
const KEPT_CAP_PER_PARTITION = Math.ceil(KEPT_CAP / PARTITIONS);
const messages = codec<MailMessage>('mail', (r) => typeof r.subject === 'string');
const keptMails = codec<KeptMail>('kept mail', (r) => typeof r.id === 'string' && typeof r.subject === 'string');

/**
 * The writes that queue one mail; `id` must be unique and stable (e.g. `rental:<id>:receipt`).
 * `near`: a key of the update they go into (the mail's outbox item lives in its partition; see
 * outboxWrites).
 */
export function mailWrites(id: string, message: MailMessage, createdAt: number, near?: string): Write[] {
  return outboxWrites({ id: `mail:${id}`, dest: MAIL_DEST, payload: messages.encode(message), createdAt }, near);
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

  /** Kept mails (no SMTP_URL), newest first (ties: by id, the greater first). */
  async kept(limit = 100): Promise<KeptMail[]> {
    const n = Math.max(1, limit);
    const lists = await Promise.all([K.keptGlobal, ...partitionKeys('mail:kept')].map((k) => this.opts.store.range<Json>(k, -n, -1)));
    const all = lists.flatMap((l) => decodeList(keptMails, l));
    all.sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.at < b.at ? 1 : -1));
    return all.slice(0, n);
  }

  private async keep(id: string, msg: MailMessage): Promise<void> {
    if ((await this.opts.store.get(K.keptIdGlobal(id))) !== undefined) return; // kept before the partitions
    const entry: KeptMail = { id, at: new Date(this.opts.clock.now()).toISOString(), ...msg };
    const marker = K.keptId(id);
    await this.opts.store.update([marker], ([seen]) =>
      seen !== undefined
        ? { writes: [], result: undefined }
        : {
            writes: [
              { op: 'set', key: marker, value: true, ttlMs: 30 * 86_400_000 },
              { op: 'push', key: K.kept(partitionOf(marker)), value: keptMails.encode(entry), cap: KEPT_CAP_PER_PARTITION },
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
