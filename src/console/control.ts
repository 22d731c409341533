import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ConnectionFilter, ConnectionInfo, DisconnectReason } from '../hub/declare.js';
import type { Store, Unsubscribe } from '../store/port.js';

/**
 * Questions to every hub process, as Centrifugo's surveys: a request on the store's pub/sub channel
 * `console:control` (Redis: every process sharing it; LMDB: this one), each process answers on
 * `console:reply:<asker>` with what it holds, and the asker waits for the processes it expects
 * (the live nodes) or SURVEY_MS, whichever comes first. A disconnect is carried out by the process
 * that holds the connection.
 */

export type Command = { op: 'connections'; filter: ConnectionFilter } | { op: 'disconnect'; filter: ConnectionFilter; reason: DisconnectReason };

interface Request {
  req: string;
  from: string;
  cmd: Command;
}

interface Answer {
  req: string;
  node: string;
  /** The connections listed (connections) or ended (disconnect). */
  connections: ConnectionInfo[];
}

/** What a survey heard: each answering node's connections, and the expected nodes that did not answer in time. */
export interface SurveyResult {
  answers: { node: string; connections: ConnectionInfo[] }[];
  missing: string[];
}

/** How long a survey waits for the processes it expects, ms. */
export const SURVEY_MS = 2000;

const CONTROL = 'console:control';
const replyChannel = (node: string) => `console:reply:${node}`;

export interface LocalConnections {
  node: string;
  list(filter: ConnectionFilter): ConnectionInfo[];
  disconnect(filter: ConnectionFilter, reason: DisconnectReason): ConnectionInfo[];
}

export class Control {
  private readonly waiting = new Map<string, { expect: Set<string>; result: SurveyResult; done: () => void }>();
  private subscriptions: Unsubscribe[] = [];

  constructor(
    private readonly store: Store,
    private readonly local: LocalConnections,
    private readonly log: Logger,
  ) {}

  /** Answers the requests of every process, and hears the answers to this one's. */
  async start(): Promise<void> {
    this.subscriptions.push(
      await this.store.subscribe(CONTROL, (message) => void this.onRequest(message)),
      await this.store.subscribe(replyChannel(this.local.node), (message) => this.onAnswer(message)),
    );
  }

  async stop(): Promise<void> {
    const subs = this.subscriptions;
    this.subscriptions = [];
    await Promise.all(subs.map((u) => u().catch(() => undefined)));
    for (const w of this.waiting.values()) w.done();
  }

  /** Asks every process; resolves once each of `expect` answered, or after SURVEY_MS. */
  survey(cmd: Command, expect: readonly string[], waitMs = SURVEY_MS): Promise<SurveyResult> {
    const req = randomBytes(8).toString('hex');
    const result: SurveyResult = { answers: [], missing: [] };
    const pending = new Set(expect);
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        if (!this.waiting.delete(req)) return;
        clearTimeout(timer);
        result.missing = [...pending];
        resolve(result);
      };
      this.waiting.set(req, { expect: pending, result, done });
      timer = setTimeout(done, waitMs);
      timer.unref();
      const request: Request = { req, from: this.local.node, cmd };
      this.store.publish(CONTROL, JSON.stringify(request)).catch((err: unknown) => {
        this.waiting.delete(req);
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  private async onRequest(message: string): Promise<void> {
    let request: Request;
    try {
      request = JSON.parse(message) as Request;
      if (typeof request.req !== 'string' || typeof request.from !== 'string' || typeof request.cmd?.op !== 'string') return;
    } catch {
      return;
    }
    const { cmd } = request;
    const connections = cmd.op === 'disconnect' ? this.local.disconnect(cmd.filter, cmd.reason) : this.local.list(cmd.filter);
    const answer: Answer = { req: request.req, node: this.local.node, connections };
    await this.store.publish(replyChannel(request.from), JSON.stringify(answer)).catch((err: unknown) => this.log.warn({ err }, 'console answer not sent'));
  }

  private onAnswer(message: string): void {
    let answer: Answer;
    try {
      answer = JSON.parse(message) as Answer;
    } catch {
      return;
    }
    const w = this.waiting.get(answer.req);
    if (!w || !Array.isArray(answer.connections)) return;
    w.result.answers.push({ node: answer.node, connections: answer.connections });
    w.expect.delete(answer.node);
    if (w.expect.size === 0) w.done();
  }
}
