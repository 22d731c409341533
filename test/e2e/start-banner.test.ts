import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { login } from '../support/auth.js';
import { MAIN, startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasScript = existsSync('/usr/bin/script');
if (!hasScript) console.warn('\n*** /usr/bin/script (util-linux) not found: the terminal banner test is SKIPPED ***\n');

interface TtyHub {
  url: string;
  /** What the terminal showed, line ends as \n. */
  screen: () => string;
  stop: () => Promise<number | null>;
}

/**
 * `node dist/src/main.js` on a pseudo-terminal (util-linux `script`), as a person runs `npm start`;
 * resolves once the banner has been printed in full.
 */
function startOnTerminal(env: Record<string, string>): Promise<TtyHub> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-q', '-e', '-c', `exec ${process.execPath} ${MAIN}`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`no banner within 30 s:\n${out}`))), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString().replace(/\r/g, '');
      const m = /maru is running: (\S+)[\s\S]*\n {2}logs {8}[^\n]*\n/.exec(out);
      // the banner and the JSON listening line (the two streams reach the terminal in either order)
      if (!m || !/"msg":"maru listening"}\n/.test(out)) return;
      clearTimeout(timer);
      // the hub's pid is in its JSON lines: SIGTERM goes to the hub, which exits, and script with it
      const pid = Number(/"pid":(\d+)/.exec(out)![1]);
      resolve({
        url: m[1]!,
        screen: () => out,
        stop: async () => {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            // already gone
          }
          return exited;
        },
      });
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before the banner:\n${out}`)));
  });
}

/** The password the banner gives `user` ("admin    password <p>   (...)"). */
const passwordIn = (screen: string, user: string) => new RegExp(`\\b${user} +password (\\S+) `).exec(screen)?.[1];

describe.skipIf(!hasScript)('the start-up banner', () => {
  const running: { stop: () => Promise<number | null> }[] = [];
  afterAll(async () => {
    for (const h of running) await h.stop();
  });

  it('on a terminal: where to open the hub, its pages and the passwords made at the first start, in plain words; the JSON lines go on', async () => {
    const dir = tempDir('banner');
    const first = await startOnTerminal({ DATA_DIR: dir });
    running.push(first);
    const screen = first.screen();
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(screen).toContain(`open        ${first.url}/pages`);
    // the pages, by path
    const pages = /\n {2}pages {7}([\s\S]*?)\n {2}sign in/.exec(screen)![1]!.split(/\s+/);
    for (const p of ['/', '/docs', '/scan', '/shows', '/trading', '/accounts', '/wallet', '/reference']) expect(pages).toContain(p);
    // the generated passwords, in plain words, and they work
    const admin = passwordIn(screen, 'admin')!;
    const partner = passwordIn(screen, 'partner')!;
    expect(admin).toMatch(/^[\w-]{12,}$/);
    expect(partner).toMatch(/^[\w-]{12,}$/);
    expect(screen).toMatch(/admin +password \S+ +\(operator; made now and shown only this once: keep it, or set ADMIN_PASSWORD\)/);
    expect(await login(first.url, 'admin', admin)).toMatch(/^mt_/);
    expect(await login(first.url, 'partner', partner)).toMatch(/^mt_/);
    // the JSON log lines for machines are still there, the listening line among them
    const json = screen.split('\n').filter((l) => l.startsWith('{'));
    expect(json.some((l) => JSON.parse(l).msg === 'maru listening')).toBe(true);
    expect(await first.stop()).toBe(0);
    running.pop();

    // a later start on the same data: no new password, and the banner says where the passwords come from
    const second = await startOnTerminal({ DATA_DIR: dir, ADMIN_PASSWORD: 'chosen-admin-password' });
    running.push(second);
    const again = second.screen();
    expect(again).toMatch(/admin +password from ADMIN_PASSWORD/);
    expect(again).toMatch(/partner +password made at the first start \(printed then\); forgotten: set PARTNER_PASSWORD and start again/);
    expect(again).not.toContain(passwordIn(screen, 'partner'));
    expect(again).not.toContain(passwordIn(screen, 'admin'));
    expect(await login(second.url, 'admin', 'chosen-admin-password')).toMatch(/^mt_/);
    expect(await second.stop()).toBe(0);
    running.pop();
  }, 90_000);

  it('a demo start on a terminal: the demo is a section of the one banner, its password printed once', async () => {
    const hub = await startOnTerminal({ DATA_DIR: tempDir('banner-demo'), DEMO: '1' });
    running.push(hub);
    const screen = hub.screen();
    const banner = /maru is running:[\s\S]*?\n {2}logs {8}[^\n]*\n/.exec(screen)![0];
    // one banner: the demo's lines sit inside it, before its last line
    expect(screen.split('maru demo is ready:')).toHaveLength(2);
    expect(banner).toMatch(/\n {2}sign in {5}[\s\S]*\nmaru demo is ready:\n {2}guided tour +http:\/\/127\.0\.0\.1:\d+\/demo#key=[\w-]+/);
    const password = /password for this run: (\S+)/.exec(banner)![1]!;
    expect(screen.split(password)).toHaveLength(2);
    expect(await login(hub.url, 'demo-editor', password)).toMatch(/^mt_/);
    expect(await hub.stop()).toBe(0);
    running.pop();
  }, 90_000);

  it('without a terminal (a pipe, a service manager): only the JSON lines, the generated password among them', async () => {
    const hub: HubProcess = await startHubProcess({ DATA_DIR: tempDir('banner-pipe') });
    running.push(hub);
    await new Promise((r) => setTimeout(r, 300));
    const lines = hub.output().split('\n').filter((l) => l.trim() !== '');
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(hub.output()).not.toContain('maru is running');
    const generated = lines.map((l) => JSON.parse(l)).filter((o) => o.password);
    expect(generated.map((o) => o.user).sort()).toEqual(['admin', 'partner']);
    expect(await login(hub.url, 'admin', generated.find((o) => o.user === 'admin').password)).toMatch(/^mt_/);
    expect(await hub.stop()).toBe(0);
    running.pop();
  }, 60_000);
});
