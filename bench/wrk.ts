/**
 * The load generator the HTTP benches share: wrk (Debian package `wrk`, one thread), walking through
 * a list of paths, and the bench's own servers (bench/http-server.ts: maru, Fastify or bare uWS with
 * the same handler logic), each in its own process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMs } from './proc.js';

export interface Run {
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  non_2xx: number;
  errors: number;
  /**
   * CPU time (user + system, all threads) the server process spent per request during the run, µs:
   * what the server itself costs, a figure the load generator's own limit does not cap.
   */
  server_cpu_us_per_request?: number;
}

export const hasWrk = () => spawnSync('wrk', ['--version']).error === undefined;

/** Starts bench/http-server.js for `target`; resolves once it prints `READY <port> <ids>`. */
export function startServer(target: string, members: number): Promise<{ child: ChildProcess; port: number; ids: string[] }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'http-server.js');
  const child = spawn(process.execPath, [script, target, String(members)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d) => {
      buf += d;
      const line = buf.split('\n').slice(0, -1).find((l) => l.startsWith('READY '));
      if (!line) return;
      const [, port, ids] = line.match(/^READY (\d+) (.*)$/)!;
      resolve({ child, port: Number(port), ids: JSON.parse(ids!) });
    });
    child.once('exit', (code) => reject(new Error(`${target} server exited with ${code}`)));
  });
}

/** A wrk Lua script that walks through the paths in order, one per request, and prints a JSON line. */
function wrkScript(paths: string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'maru-wrk-')), 'paths.lua');
  writeFileSync(
    file,
    `local paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\nlocal n = #paths\nlocal i = 0\n` +
      `request = function()\n  i = i + 1\n  return wrk.format("GET", paths[((i - 1) % n) + 1])\nend\n` +
      `done = function(summary, latency, requests)\n` +
      `  io.write(string.format("JSON {\\"requests\\":%d,\\"non2xx\\":%d,\\"errors\\":%d,\\"p50\\":%f,\\"p99\\":%f,\\"duration_us\\":%d}\\n",` +
      ` summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,` +
      ` latency:percentile(50), latency:percentile(99), summary.duration))\nend\n`,
  );
  return file;
}

/**
 * One wrk run (one thread, `connections` connections, `seconds` long) over the paths; with the
 * server's `pid`, also the server's CPU time per request.
 */
export function runWrk(port: number, paths: string[], seconds: number, connections: number, pid?: number): Run {
  const cpu0 = pid === undefined ? undefined : cpuMs(pid);
  const out = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', wrkScript(paths), `http://127.0.0.1:${port}`], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  const line = out.stdout.split('\n').find((l) => l.startsWith('JSON '));
  if (!line) throw new Error(`wrk failed: ${out.stderr}\n${out.stdout}`);
  const r = JSON.parse(line.slice(5));
  const cpu1 = pid === undefined ? undefined : cpuMs(pid);
  return {
    requests_per_s: Math.round(r.requests / (r.duration_us / 1e6)),
    p50_ms: +(r.p50 / 1000).toFixed(3),
    p99_ms: +(r.p99 / 1000).toFixed(3),
    requests: r.requests,
    non_2xx: r.non2xx,
    errors: r.errors,
    ...(cpu0 !== undefined && cpu1 !== undefined && r.requests > 0 ? { server_cpu_us_per_request: +(((cpu1 - cpu0) * 1000) / r.requests).toFixed(1) } : {}),
  };
}
