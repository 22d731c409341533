/**
 * bench/http: the hub's per-request overhead. Throughput and p99 latency of GET /healthz on the hub
 * against a bare uWS handler, and of GET /member (and GET /work) on the hub against Fastify serving
 * the same handlers (bench/http-server.ts); every server in its own process, the load generator in
 * another, the runs alternating over `rounds` rounds (medians reported). Prints one JSON object.
 *
 *   npm run build && nice node dist/bench/http.js [--seconds 5] [--connections 64] [--members 40000] [--rounds 5]
 *
 * The load comes from wrk (Debian package `wrk`, one thread): it costs far less CPU than a Node load
 * generator, which matters on two cores. Every /work request credits a different member (1 unit,
 * v 150) so no request hits the daily cap of 3 units: the figures are real credits, and the
 * non-2xx count is reported to prove it.
 *
 * Every run also reports the server process's CPU time per request (user + system, all its threads,
 * from /proc): on two cores the one wrk thread can be what limits the faster server, so the
 * throughput ratio can understate the gap between two servers; the CPU each spends per request
 * does not depend on how fast the load comes.
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { hasWrk, runWrk as runWrkWith, startServer, type Run } from './wrk.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    members: { type: 'string', default: '40000' },
    rounds: { type: 'string', default: '5' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const members = Number(values.members);
const rounds = Number(values.rounds);

const runWrk = (server: { port: number; child: { pid?: number | undefined } }, paths: string[]) =>
  runWrkWith(server.port, paths, seconds, connections, server.child.pid);

if (!hasWrk()) {
  console.error('bench/http needs wrk: apt-get install wrk');
  process.exit(1);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** The median of the runs' server CPU time per request, µs. */
const cpuOf = (runs: Run[]) => median(runs.map((r) => r.server_cpu_us_per_request ?? NaN));
const summary = (runs: Run[]) => ({
  requests_per_s: median(runs.map((r) => r.requests_per_s)),
  p50_ms: median(runs.map((r) => r.p50_ms)),
  p99_ms: median(runs.map((r) => r.p99_ms)),
  non_2xx: runs.reduce((n, r) => n + r.non_2xx, 0),
  errors: runs.reduce((n, r) => n + r.errors, 0),
  server_cpu_us_per_request: cpuOf(runs),
  rounds: runs.map((r) => r.requests_per_s),
});

// /healthz on the hub against a bare uWS handler, /member on the hub against Fastify: every server
// runs at once (own process), and the runs alternate round by round, so a load spike from other
// users of the machine hits both sides of a comparison alike; each figure is the median of the rounds
const servers = {
  uws: await startServer('uws', 0),
  maru: await startServer('maru', members),
  fastify: await startServer('fastify', members),
};
const memberPaths = (ids: string[]) => ids.map((id) => `/member?id=${id}`);
for (const t of ['maru', 'fastify'] as const) runWrk(servers[t], memberPaths(servers[t].ids.slice(0, 100)));
runWrk(servers.uws, ['/healthz']);
const runs: Record<string, Run[]> = { healthz_uws: [], healthz_maru: [], member_maru: [], member_fastify: [] };
for (let round = 0; round < rounds; round++) {
  // the order flips every round
  const flip = round % 2 === 1;
  for (const t of flip ? (['maru', 'uws'] as const) : (['uws', 'maru'] as const)) runs[`healthz_${t}`]!.push(runWrk(servers[t], ['/healthz']));
  for (const t of flip ? (['fastify', 'maru'] as const) : (['maru', 'fastify'] as const)) runs[`member_${t}`]!.push(runWrk(servers[t], memberPaths(servers[t].ids)));
}
servers.uws.child.kill('SIGKILL');

const results: Record<string, Record<string, unknown>> = {
  healthz: { uws: summary(runs.healthz_uws!), maru: summary(runs.healthz_maru!) },
  member: { maru: summary(runs.member_maru!), fastify: summary(runs.member_fastify!) },
};
const perRound = (a: Run[], b: Run[]) => a.map((r, i) => +(r.requests_per_s / b[i]!.requests_per_s).toFixed(2));

// GET /work as before: one run per server, each member credited once per pass
const work: Record<string, Run> = {};
for (const t of ['maru', 'fastify'] as const) {
  work[t] = runWrk(servers[t], [0, 1, 2].flatMap((pass) => servers[t].ids.map((id) => `/work?id=${id}&kc=1&v=${150 + pass}`)));
  servers[t].child.kill('SIGKILL');
}
results.work = work;

console.log(
  JSON.stringify(
    {
      bench: 'http',
      tool: 'wrk -t1',
      seconds,
      connections,
      members,
      rounds,
      node: process.version,
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      loadavg_1m_at_end: +loadavg()[0]!.toFixed(1),
      results,
      comparison: {
        healthz: {
          maru_of_uws: +(median(runs.healthz_maru!.map((r) => r.requests_per_s)) / median(runs.healthz_uws!.map((r) => r.requests_per_s))).toFixed(2),
          cpu_per_request_uws_of_maru: +(cpuOf(runs.healthz_uws!) / cpuOf(runs.healthz_maru!)).toFixed(2),
          per_round: perRound(runs.healthz_maru!, runs.healthz_uws!),
        },
        member: {
          throughput_x: +(median(runs.member_maru!.map((r) => r.requests_per_s)) / median(runs.member_fastify!.map((r) => r.requests_per_s))).toFixed(2),
          per_round: perRound(runs.member_maru!, runs.member_fastify!),
          cpu_per_request_fastify_over_maru: +(cpuOf(runs.member_fastify!) / cpuOf(runs.member_maru!)).toFixed(2),
          p99_maru_ms: median(runs.member_maru!.map((r) => r.p99_ms)),
          p99_fastify_ms: median(runs.member_fastify!.map((r) => r.p99_ms)),
        },
        work: {
          throughput_x: +(work.maru!.requests_per_s / work.fastify!.requests_per_s).toFixed(2),
          cpu_per_request_fastify_over_maru: +(cpuOf([work.fastify!]) / cpuOf([work.maru!])).toFixed(2),
          p99_maru_ms: work.maru!.p99_ms,
          p99_fastify_ms: work.fastify!.p99_ms,
        },
      },
    },
    null,
    2,
  ),
);
