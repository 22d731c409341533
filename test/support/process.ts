import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REDIS_TEST_URL } from './redis.js';

const ROOT = resolve(import.meta.dirname, '../..');
export const MAIN = join(ROOT, 'dist/src/main.js');

export interface HubProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything the process printed so far. */
  output: () => string;
  /** SIGTERM (or the given signal) and wait for the exit; resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `maru-${name}-`));

/**
 * The shared test Redis (REDIS_TEST_URL, 127.0.0.1:6379) runs without AOF, which the hub refuses
 * unless told: hubs started on it say REDIS_DURABILITY=none (tests may lose data on a Redis crash;
 * they do not crash it). A test that sets REDIS_DURABILITY itself, or uses another Redis, is left as is.
 */
function sharedRedisDurability(env: Record<string, string>): Record<string, string> {
  return env.REDIS_URL !== undefined && env.REDIS_URL === REDIS_TEST_URL && !('REDIS_DURABILITY' in env) ? { REDIS_DURABILITY: 'none' } : {};
}

/**
 * Starts the built hub (`dist/src/main.js`, as `npm start` runs it) on a free port and resolves once
 * it logs that it listens. `npm test` builds first.
 */
export function startHubProcess(env: Record<string, string>, timeoutMs = 20_000): Promise<HubProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build (npm test does)`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...sharedRedisDurability(env), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let settled = false;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`hub did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (settled) return;
      for (const line of out.split('\n')) {
        if (!line.includes('maru listening')) continue;
        const { url, port } = JSON.parse(line) as { url: string; port: number };
        settled = true;
        clearTimeout(timer);
        resolvePromise({
          url,
          port,
          child,
          output: () => out,
          stop: async (signal = 'SIGTERM') => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
        return;
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`hub exited with ${code} before listening:\n${out}`));
    });
  });
}
