import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Redis and Sentinel processes a bench starts on free loopback ports (Debian's redis-server and
 * redis-sentinel), each in a temporary directory, all ended and removed by `stopAll`.
 */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Waits until something answers PING on the port (about 10 s at most). */
export async function ping(port: number): Promise<void> {
  for (let tries = 0; ; tries++) {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.ping();
      return;
    } catch (err) {
      if (tries > 200) throw err;
      await sleep(50);
    } finally {
      c.disconnect();
    }
  }
}

const children: ChildProcess[] = [];
const dirs: string[] = [];

/** A temporary directory removed by `stopAll`. */
export function tempDirFor(kind: string): string {
  const d = mkdtempSync(join(tmpdir(), `maru-bench-${kind}-`));
  dirs.push(d);
  return d;
}

/** Starts a process ended by `stopAll`. */
export function run(cmd: string, args: string[]): ChildProcess {
  const c = spawn(cmd, args, { stdio: 'ignore' });
  children.push(c);
  return c;
}

/** A redis-server with AOF (everysec) and no snapshots, answering PING when this resolves. */
export async function redisServer(extra: string[] = [], at: { port?: number; dir?: string } = {}) {
  const port = at.port ?? (await freePort());
  const dir = at.dir ?? tempDirFor('redis');
  const child = run('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', ...extra]);
  await ping(port);
  return { port, dir, child };
}

/** Ends every process started here (SIGKILL) and removes the directories. */
export async function stopAll(): Promise<void> {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await sleep(200);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
