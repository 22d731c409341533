/** A real clamd on loopback for the scan tests, with a one-line local signature database (EICAR). */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EICAR } from './uploads.js';
import { sleep } from './wait.js';

export const CLAMD = process.env.CLAMD_BIN ?? '/usr/sbin/clamd';

export function clamdAvailable(): boolean {
  if (existsSync(CLAMD)) return true;
  if (process.env.REQUIRE_CLAMD === '1') throw new Error(`REQUIRE_CLAMD=1 but ${CLAMD} is missing (apt-get install clamav-daemon)`);
  console.warn(`\n${'!'.repeat(72)}\n!! ${CLAMD} not found: clamd scan tests SKIPPED (apt-get install clamav-daemon;\n!! REQUIRE_CLAMD=1 makes this fatal)\n${'!'.repeat(72)}\n`);
  return false;
}

export interface RunningClamd {
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    let out = '';
    s.on('connect', () => s.write('zPING\0'));
    s.on('data', (d) => (out += d.toString()));
    s.on('close', () => resolve(out.startsWith('PONG')));
    s.on('error', () => resolve(false));
    s.setTimeout(1000, () => s.destroy());
  });
}

/** Starts clamd in the foreground on a free loopback port; resolves once it answers PING. */
export async function startClamd(opts: { streamMaxLength?: string } = {}): Promise<RunningClamd> {
  const dir = mkdtempSync(join(tmpdir(), 'maru-clamd-'));
  const db = join(dir, 'db');
  mkdirSync(db);
  const md5 = createHash('md5').update(EICAR).digest('hex');
  writeFileSync(join(db, 'eicar.hdb'), `${md5}:${EICAR.length}:Eicar-Test-Signature\n`);
  const port = await freePort();
  const conf = join(dir, 'clamd.conf');
  writeFileSync(
    conf,
    [
      `TCPSocket ${port}`,
      'TCPAddr 127.0.0.1',
      'Foreground yes',
      `DatabaseDirectory ${db}`,
      `LogFile ${join(dir, 'clamd.log')}`,
      `TemporaryDirectory ${dir}`,
      `StreamMaxLength ${opts.streamMaxLength ?? '64M'}`,
      'SelfCheck 0',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(CLAMD, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const end = Date.now() + 30_000;
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`clamd did not start: ${stderr.slice(-500)}`);
    }
    await sleep(100);
  }
  const pid = child.pid!;
  return {
    url: `tcp://127.0.0.1:${port}`,
    port,
    pid,
    async stop() {
      if (child.exitCode === null) {
        process.kill(pid, 'SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
