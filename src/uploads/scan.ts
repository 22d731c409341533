import { createReadStream } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { AppError } from '../errors.js';

/** The answer of a virus scan. */
export type ScanVerdict = { clean: true } | { clean: false; signature: string };

/**
 * Scans a file before its record commits. `scan` resolves with the verdict, or rejects with AppError
 * 503 `scanner_unavailable` when the scanner cannot answer (the request then stores nothing).
 */
export interface Scanner {
  scan(path: string): Promise<ScanVerdict>;
}

/** Throws 422 `infected` naming the signature when the verdict is not clean. */
export function assertClean(verdict: ScanVerdict, filename: string): void {
  if (!verdict.clean) {
    throw new AppError('unprocessable', 'infected', `${filename} contains ${verdict.signature}`, { filename, signature: verdict.signature });
  }
}

export interface ClamdOptions {
  /** Time for connecting and for the whole scan. Default 30 s. */
  timeoutMs?: number;
  /** Bytes per INSTREAM chunk. Default 64 KiB. */
  chunkBytes?: number;
  /** Scans running at once from this process (clamd's threads are shared); default 4. */
  maxConcurrent?: number;
  /** Scans waiting for a slot; beyond, 503 `scanner_busy` at once. Default 64. */
  maxWaiting?: number;
}

/** Parses CLAMD_URL (`tcp://host:port`). */
export function parseClamdUrl(url: string): { host: string; port: number } {
  const u = new URL(url);
  if (u.protocol !== 'tcp:' || !u.hostname || !u.port) throw new Error(`CLAMD_URL must be tcp://host:port, got ${url}`);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}

/**
 * clamd over TCP with INSTREAM: `zINSTREAM\0`, then `<u32 BE length><chunk>`..., then four zero
 * bytes; clamd answers `stream: OK`, `stream: <signature> FOUND`, or `... ERROR`. The file is read
 * from disk as it is sent (the socket's backpressure is respected), never held whole.
 */
export class ClamdScanner implements Scanner {
  private readonly host: string;
  private readonly port: number;
  private readonly timeoutMs: number;
  private readonly chunkBytes: number;
  private readonly maxConcurrent: number;
  private readonly maxWaiting: number;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(url: string, opts: ClamdOptions = {}) {
    ({ host: this.host, port: this.port } = parseClamdUrl(url));
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.chunkBytes = opts.chunkBytes ?? 65_536;
    this.maxConcurrent = opts.maxConcurrent ?? 4;
    this.maxWaiting = opts.maxWaiting ?? 64;
  }

  async scan(path: string): Promise<ScanVerdict> {
    if (this.running >= this.maxConcurrent) {
      if (this.waiting.length >= this.maxWaiting) {
        throw new AppError('unavailable', 'scanner_busy', 'the virus scanner is busy; try again shortly', { retry_after_s: 5 });
      }
      await new Promise<void>((r) => this.waiting.push(r));
    }
    this.running++;
    try {
      return await this.scanOnce(path);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private scanOnce(path: string): Promise<ScanVerdict> {
    return new Promise((resolve, reject) => {
      const unavailable = (reason: string) =>
        new AppError('unavailable', 'scanner_unavailable', 'the virus scanner is not available; try again later', { reason });
      let done = false;
      let answer = '';
      const socket: Socket = connect({ host: this.host, port: this.port });
      const file = createReadStream(path, { highWaterMark: this.chunkBytes });
      const finish = (err: AppError | undefined, verdict?: ScanVerdict) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        file.destroy();
        socket.destroy();
        if (err) reject(err);
        else resolve(verdict!);
      };
      const timer = setTimeout(() => finish(unavailable('timeout')), this.timeoutMs);
      let socketError = '';
      let connected = false;
      // an error after clamd has answered (EPIPE: it stopped reading, e.g. its size limit) is read from the answer on close
      socket.on('error', (e: NodeJS.ErrnoException) => {
        socketError = e.code ?? e.message;
        if (connected && (e.code === 'EPIPE' || e.code === 'ECONNRESET')) {
          // clamd stops reading and closes when a stream passes its StreamMaxLength
          socketError = `clamd closed the connection during the upload (${e.code}): is its StreamMaxLength below the file size?`;
        }
        if (!answer) finish(unavailable(socketError));
      });
      file.on('error', (e: NodeJS.ErrnoException) => finish(new AppError('internal', 'scan_failed', 'the file to scan could not be read', { reason: e.code })));
      socket.on('data', (d) => {
        answer += d.toString('latin1');
        if (answer.length > 4096) return finish(unavailable('clamd answered too much'));
        if (answer.includes('\0')) {
          file.destroy();
          socket.end();
        }
      });
      socket.on('close', () => {
        if (done) return;
        const line = answer.replace(/\0.*$/s, '').trim();
        const found = /^stream: (.+) FOUND$/.exec(line);
        if (line === 'stream: OK') finish(undefined, { clean: true });
        else if (found) finish(undefined, { clean: false, signature: found[1]! });
        else finish(unavailable(line ? `clamd: ${line.slice(0, 200)}` : socketError || 'clamd closed without an answer'));
      });
      socket.once('connect', () => {
        connected = true;
        socket.write('zINSTREAM\0');
        file.on('data', (chunk) => {
          const buf = chunk as Buffer;
          const len = Buffer.alloc(4);
          len.writeUInt32BE(buf.length);
          socket.write(len);
          if (!socket.write(buf)) {
            file.pause();
            socket.once('drain', () => file.resume());
          }
        });
        file.on('end', () => socket.write(Buffer.alloc(4)));
      });
    });
  }
}
