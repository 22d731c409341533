/**
 * bench/upload: streaming multipart uploads through the hub. Prints one JSON object.
 *
 *   npm run build && node dist/bench/upload.js [--applicants 20] [--rounds 3] [--mib 5]
 *       [--sizes 1,5,10,25,50] [--rss-applicants 4] [--kind pdf|hwp]
 *
 * A hub process (this script with --serve) has one upload route shaped like the rental form: three
 * file fields, each file streamed to a temporary file, checked by content (`inspectUpload`), moved
 * into the file-system blob store (fsync + rename), then deleted again so the disk stays bounded.
 * 1. Throughput: `applicants` clients at once, each sending `rounds` requests of 3 x `mib` MiB
 *    one after the other: MB/s of file bytes accepted and the latency percentiles of one request.
 * 2. Memory: for each file size, `rss-applicants` clients at once send one request of 3 files of
 *    that size; the hub's peak RSS (VmRSS sampled every 10 ms from /proc) is recorded per size. A hub
 *    that buffered bodies would grow by about rss-applicants x 3 x size; a streaming one stays flat.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import CFB from 'cfb';
import pino from 'pino';
import { z } from 'zod';
import { rssBytes } from './proc.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const MiB = 1 << 20;
const KIND = arg('kind', 'pdf') as 'pdf' | 'hwp';
const r1 = (x: number) => Math.round(x * 10) / 10;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function serve(): Promise<void> {
  const { Hub, Reply } = await import('../src/hub/index.js');
  const { FsBlobStore } = await import('../src/blobs/index.js');
  const { inspectUpload } = await import('../src/uploads/index.js');
  const root = process.env.BENCH_DIR!;
  const blobs = await new FsBlobStore(join(root, 'blobs')).init();
  const hub = new Hub({
    logger: pino({ level: 'silent' }),
    bodyLimit: 1 << 20,
    webDir: root,
    shutdownGraceMs: 1000,
    uploads: { tempDir: join(root, 'tmp'), maxFileBytes: 64 * MiB },
  });
  hub.route({
    method: 'POST',
    path: '/bench/upload',
    body: { schema: z.object({ contactPhone: z.string() }), multipart: { files: ['bizCard', 'uniqueNumber', 'internalResolution'], fields: ['contactPhone'] } },
    handler: async (ctx) => {
      let bytes = 0;
      const keys: string[] = [];
      for (const f of ctx.files!) {
        await inspectUpload(f);
        keys.push((await blobs.putFile(f.tempPath)).key);
        bytes += f.size;
      }
      await Promise.all(keys.map((k) => blobs.delete(k)));
      return Reply.json({ bytes }, 201);
    },
  });
  const port = await hub.listen('127.0.0.1', 0);
  process.send!({ port });
  process.on('SIGTERM', () => void hub.stop().then(() => process.exit(0)));
}

/**
 * A file of about `size` bytes, made once per size and reused: a PDF-looking one (header + random
 * filler), or with `--kind hwp` an HWP 5 compound file (FileHeader + a large BodyText stream), whose
 * check parses the whole compound file in memory.
 */
function fileOf(size: number): Buffer {
  if (KIND === 'hwp') {
    const header = Buffer.alloc(256);
    header.write('HWP Document File', 0, 'latin1');
    header.writeUInt32LE(0x05010001, 32);
    header.writeUInt32LE(1, 36);
    const doc = CFB.utils.cfb_new();
    CFB.utils.cfb_add(doc, '/FileHeader', header);
    CFB.utils.cfb_add(doc, '/BodyText/Section0', randomBytes(Math.max(8192, size - 64 * 1024)));
    return Buffer.from(CFB.write(doc, { type: 'buffer' }) as Uint8Array);
  }
  const b = randomBytes(size);
  b.write('%PDF-1.4\n', 0, 'latin1');
  return b;
}

/** One request: 3 files streamed from memory with backpressure; resolves with ms and status. */
function upload(port: number, agent: Agent, file: Buffer): Promise<{ ms: number; status: number }> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = (name: string) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.${KIND}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const pieces = [
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="contactPhone"\r\n\r\n010-1234-5678\r\n`),
    ...['bizCard', 'uniqueNumber', 'internalResolution'].flatMap((n) => [head(n), file, Buffer.from('\r\n')]),
    Buffer.from(`--${boundary}--\r\n`),
  ];
  const length = pieces.reduce((s, p) => s + p.length, 0);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/bench/upload', agent, headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - t0, status: res.statusCode ?? 0 }));
      },
    );
    req.on('error', reject);
    let i = 0;
    const pump = () => {
      while (i < pieces.length) {
        // write large buffers in 256 KiB slices, so backpressure is honoured as in a real client
        const p = pieces[i++]!;
        let ok = true;
        for (let o = 0; o < p.length; o += 256 * 1024) ok = req.write(p.subarray(o, o + 256 * 1024));
        if (!ok) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

async function main(): Promise<void> {
  const applicants = Number(arg('applicants', '20'));
  const rounds = Number(arg('rounds', '3'));
  const mib = Number(arg('mib', '5'));
  const sizes = arg('sizes', '1,5,10,25,50').split(',').map(Number);
  const rssApplicants = Number(arg('rss-applicants', '4'));
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-upload-'));
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve'], {
    env: { ...process.env, BENCH_DIR: dir },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((r) => child.once('message', (m) => r((m as { port: number }).port)));
  const pid = child.pid!;
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 10);
  try {
    const idle = rssBytes(pid);
    // 1. throughput
    const file = fileOf(mib * MiB);
    await upload(port, agent, fileOf(64 * 1024)); // warm-up
    const latencies: number[] = [];
    let failed = 0;
    peak = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: applicants }, async () => {
        for (let r = 0; r < rounds; r++) {
          const { ms, status } = await upload(port, agent, file);
          if (status === 201) latencies.push(ms);
          else failed++;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const accepted = latencies.length * 3 * file.length;
    const throughput = {
      applicants,
      rounds,
      files_per_request: 3,
      file_mib: mib,
      requests: latencies.length,
      failed,
      seconds: r1(seconds),
      mb_per_s: r1(accepted / 1e6 / seconds),
      p50_ms: Math.round(pct(latencies, 50)),
      p99_ms: Math.round(pct(latencies, 99)),
      max_ms: Math.round(latencies.at(-1) ?? 0),
      hub_peak_rss_mib: r1(peak / MiB),
    };
    // 2. memory as the file size grows
    const memory = [];
    for (const size of sizes) {
      const f = fileOf(size * MiB);
      peak = rssBytes(pid);
      const results = await Promise.all(Array.from({ length: rssApplicants }, () => upload(port, agent, f)));
      memory.push({
        file_mib: size,
        in_flight_mib: rssApplicants * 3 * size,
        statuses: [...new Set(results.map((x) => x.status))],
        hub_peak_rss_mib: r1(peak / MiB),
      });
    }
    console.log(JSON.stringify({ bench: 'upload', kind: KIND, node: process.version, hub_idle_rss_mib: r1(idle / MiB), throughput, memory }, null, 2));
  } finally {
    clearInterval(sampler);
    agent.destroy();
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) void serve();
else void main();
