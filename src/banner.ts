/**
 * The start-up banner for a person at a terminal (README "Run"): where to open the hub, its pages
 * and the passwords this start made, in plain words. The JSON log lines stay on stdout for
 * machines; the banner goes to stderr, as command-line tools write what is meant for the person
 * there, and only when that is a terminal (else stdout when that one is). Without a terminal
 * (a service manager, a pipe, a test) nothing but the JSON lines is written: the generated
 * passwords are in them already (a `warn` line each, at the first start). A demo start is the one
 * exception: its lines (the tour's address, the demo password) go to stdout as well without a
 * terminal, for `npm run demo` through a pipe; on a terminal they are a section of this banner.
 */

export interface BannerInput {
  url: string;
  /** The page index (/pages): every page's path and title. */
  pages: readonly { path: string; title: string }[];
  /** Passwords this start made (AuthService.generated, the demo accounts'). */
  passwords: readonly { user: string; password: string }[];
  /** Which fixed accounts take their password from the configuration. */
  configured: { admin: boolean; partner: boolean };
  /**
   * With DEMO=1, the demo's own lines (src/demo/page.ts): the guided tour, a stop per service and
   * the demo accounts with their password, which then appears there only.
   */
  demo?: string | undefined;
}

const FIXED = [
  { user: 'admin', setting: 'ADMIN_PASSWORD', role: 'operator' },
  { user: 'partner', setting: 'PARTNER_PASSWORD', role: 'rental partner' },
] as const;

/** Words wrapped to lines of at most `width` characters, each line after the first indented by `indent`. */
function wrap(words: readonly string[], width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 2 + w.length > width) (lines.push(line), (line = ''));
    line = line ? `${line}  ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.join(`\n${indent}`);
}

export function banner(i: BannerInput): string {
  const pad = (t: string) => t.padEnd(12);
  const indent = ' '.repeat(14);
  const out = ['', `maru is running: ${i.url}`, `  ${pad('open')}${i.url}/pages   (every page, with what it is for)`];
  out.push(`  ${pad('pages')}${wrap(i.pages.map((p) => p.path), 86, indent)}`);
  const lines: string[] = [];
  for (const f of FIXED) {
    const made = i.passwords.find((p) => p.user === f.user);
    if (made) lines.push(`${f.user.padEnd(9)}password ${made.password}   (${f.role}; made now and shown only this once: keep it, or set ${f.setting})`);
    else if (i.configured[f.user]) lines.push(`${f.user.padEnd(9)}password from ${f.setting}`);
    else lines.push(`${f.user.padEnd(9)}password made at the first start (printed then); forgotten: set ${f.setting} and start again`);
  }
  // the demo accounts share one password per run (named by the demo's lines when there are some)
  const others = new Map<string, string[]>();
  if (i.demo === undefined) for (const p of i.passwords) if (!FIXED.some((f) => f.user === p.user)) others.set(p.password, [...(others.get(p.password) ?? []), p.user]);
  for (const [password, users] of others) lines.push(`${users.join(', ')}: password ${password}   (made for this run)`);
  lines.push(`other accounts: made by admin at ${i.url}/accounts`);
  out.push(`  ${pad('sign in')}${lines.join(`\n${indent}`)}`);
  if (i.demo !== undefined) out.push(i.demo.replace(/^\n+|\n+$/g, ''), '');
  out.push(`  ${pad('logs')}JSON lines on stdout (LOG_LEVEL); stop with Ctrl-C`, '');
  return out.join('\n');
}

/** Where the banner goes: stderr when it is a terminal, else stdout when that is one, else nowhere. */
export function bannerStream(streams: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream } = process): NodeJS.WriteStream | undefined {
  if (streams.stderr.isTTY) return streams.stderr;
  if (streams.stdout.isTTY) return streams.stdout;
  return undefined;
}
