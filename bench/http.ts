/**
 * bench/http: throughput and p99 latency of GET /member and GET /work on the maru hub (uWS) and on
 * Fastify serving the same handlers (bench/http-server.ts), in one run, one after the other, each
 * server in its own process and the load generator in another. Prints one JSON object.
 *
 *   npm run build && node dist/bench/http.js [--seconds 8] [--connections 64] [--members 40000]
 *
 * The load comes from wrk (Debian package `wrk`, one thread): it costs far less CPU than a Node load
 * generator, which matters on two cores. Every /work request credits a different member (1 unit,
 * v 150) so no request hits the daily cap of 3 units: the figures are real credits, and the
 * non-2xx count is reported to prove it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    members: { type: 'string', default: '40000' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const members = Number(values.members);
const hasWrk = spawnSync('wrk', ['--version']).error === undefined;

interface Run {
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  non_2xx: number;
  errors: number;
}

function startServer(target: string): Promise<{ child: ChildProcess; port: number; ids: string[] }> {
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

/** A wrk Lua script that walks through the paths in order, one per request. */
function wrkScript(paths: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'maru-wrk-'));
  const file = join(dir, 'paths.lua');
  writeFileSync(
    file,
    `local paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\n` +
      `local n = #paths\nlocal i = 0\n` +
      `request = function()\n  i = i + 1\n  return wrk.format("GET", paths[((i - 1) % n) + 1])\nend\n` +
      `done = function(summary, latency, requests)\n` +
      `  io.write(string.format("JSON {\\"requests\\":%d,\\"non2xx\\":%d,\\"errors\\":%d,\\"p50\\":%f,\\"p99\\":%f,\\"duration_us\\":%d}\\n",` +
      ` summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,` +
      ` latency:percentile(50), latency:percentile(99), summary.duration))\nend\n`,
  );
  return file;
}

function runWrk(port: number, paths: string[]): Run {
  const out = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', wrkScript(paths), `http://127.0.0.1:${port}`], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  const line = out.stdout.split('\n').find((l) => l.startsWith('JSON '));
  if (!line) throw new Error(`wrk failed: ${out.stderr}\n${out.stdout}`);
  const r = JSON.parse(line.slice(5));
  return {
    requests_per_s: Math.round(r.requests / (r.duration_us / 1e6)),
    p50_ms: +(r.p50 / 1000).toFixed(3),
    p99_ms: +(r.p99 / 1000).toFixed(3),
    requests: r.requests,
    non_2xx: r.non2xx,
    errors: r.errors,
  };
}

if (!hasWrk) {
  console.error('bench/http needs wrk: apt-get install wrk');
  process.exit(1);
}

const results: Record<string, Record<string, Run>> = {};
for (const target of ['maru', 'fastify']) {
  const { child, port, ids } = await startServer(target);
  // warm-up on reads only, so every member keeps its 3 units for the measured /work run
  runWrk(port, ids.slice(0, 100).map((id) => `/member?id=${id}`));
  results[target] = {
    member: runWrk(port, ids.map((id) => `/member?id=${id}`)),
    work: runWrk(port, [0, 1, 2].flatMap((pass) => ids.map((id) => `/work?id=${id}&kc=1&v=${150 + pass}`))),
  };
  child.kill('SIGKILL');
}

const ratio = (route: 'member' | 'work') => ({
  throughput_x: +(results.maru![route]!.requests_per_s / results.fastify![route]!.requests_per_s).toFixed(2),
  p99_maru_ms: results.maru![route]!.p99_ms,
  p99_fastify_ms: results.fastify![route]!.p99_ms,
});

console.log(
  JSON.stringify(
    {
      bench: 'http',
      tool: 'wrk -t1',
      seconds,
      connections,
      members,
      node: process.version,
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      results,
      comparison: { member: ratio('member'), work: ratio('work') },
    },
    null,
    2,
  ),
);
