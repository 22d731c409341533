// The wallet page: balances, history, buying a challenge, its peg, payout requests, and receipts
// verified here (the receipt hash over its canonical JSON, then the chain's RFC 6962 inclusion proof).

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) {
  sessionStorage.setItem('sso', fromHash);
  history.replaceState(null, '', location.pathname);
}
const token = sessionStorage.getItem('sso');
let user = '';
if (token) {
  try {
    user = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))).sub;
  } catch {
    user = '';
  }
}
$('who').textContent = user ? `signed in as ${user}` : 'not signed in';
$('signin').hidden = Boolean(token);
$('sso-go').addEventListener('click', () => {
  const u = ($('sso-url') as HTMLInputElement).value.replace(/\/+$/, '');
  location.href = `${u}/sso/login?user=${encodeURIComponent(($('sso-user') as HTMLInputElement).value)}&return=${encodeURIComponent(location.origin + '/wallet')}`;
});

const fmt = (units: string) => {
  const b = BigInt(units);
  const neg = b < 0n;
  const a = neg ? -b : b;
  return `${neg ? '-' : ''}${a / 1_000_000n}.${(a % 1_000_000n).toString().padStart(6, '0')}`;
};
const auth = (): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});
const key = () => crypto.randomUUID();
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(path, {
    method,
    redirect: 'manual',
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': key() }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed };
}
const say = (s: string) => ($('message').textContent = s);

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as unknown as ArrayBuffer));
}
const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string) => new Uint8Array(h.match(/../g)!.map((x) => parseInt(x, 16)));
const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), (o += p.length));
  return out;
};
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
}
const enc = new TextEncoder();

/** Checks a receipt: its hash, then its leaf's inclusion in the chain's tree (RFC 9162 2.1.3.2). */
async function verify(hash: string): Promise<string> {
  const r = await api('GET', `/api/token/receipt/${hash}`);
  if (r.status !== 200) return `not found (${r.status})`;
  if (hex(await sha256(enc.encode(canonical(r.body.receipt)))) !== hash) return 'hash mismatch';
  const p = r.body.proof;
  if (!p) return 'hash ok; not yet on the chain';
  const data = canonical({ id: `receipt:${hash}`, kind: 'receipt', data: { hash, prev_hash: r.body.receipt.prev_hash, n: r.body.receipt.n, kind: r.body.receipt.kind } });
  let node = await sha256(cat(new Uint8Array([0]), enc.encode(data)));
  if (hex(node) !== p.leaf_hash) return 'leaf mismatch';
  let fn = p.leaf_index;
  let sn = p.tree_size - 1;
  for (const h of p.audit_path as string[]) {
    if (sn === 0) return 'proof too long';
    if (fn % 2 === 1 || fn === sn) {
      node = await sha256(cat(new Uint8Array([1]), unhex(h), node));
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) (fn >>= 1), (sn >>= 1);
    } else node = await sha256(cat(new Uint8Array([1]), node, unhex(h)));
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && hex(node) === p.root ? `verified on the chain (leaf ${p.leaf_index} of ${p.tree_size}, tx ${r.body.chain?.tx_id?.slice(0, 12)}…)` : 'proof does not match the root';
}

function addReceipt(hash: string, label = '') {
  if (document.querySelector(`#receipts li[data-hash="${hash}"]`)) return;
  const li = document.createElement('li');
  li.className = 'receipt';
  li.dataset.hash = hash;
  li.innerHTML = `<code>${hash.slice(0, 16)}…</code> <span class="kind"></span> <button>verify</button> <span class="result"></span>`;
  li.querySelector('.kind')!.textContent = label;
  li.querySelector('button')!.addEventListener('click', async () => {
    li.querySelector('.result')!.textContent = await verify(hash);
  });
  $('receipts').prepend(li);
}

async function refresh() {
  if (!token) return;
  const rs = await api('GET', '/api/token/receipts?limit=20');
  if (rs.status === 200) for (const r of [...rs.body.receipts].reverse()) addReceipt(r.receipt_hash, `${r.kind} ${fmt(r.amount)}`);
  const w = await api('GET', '/api/token/wallet?limit=50');
  if (w.status !== 200) return say(w.body?.error?.message ?? `wallet: ${w.status}`);
  $('balance').textContent = fmt(w.body.balance);
  $('credit').textContent = fmt(w.body.learning_credit);
  $('collateral').textContent = fmt(w.body.collateral);
  $('history').replaceChildren(
    ...w.body.history.map((t: any) => {
      const tr = document.createElement('tr');
      const out = t.debit.startsWith(`u:${user}:`);
      for (const s of [new Date(t.ts).toLocaleString(), t.code, fmt(t.amount), out ? 'out' : 'in']) tr.append(Object.assign(document.createElement('td'), { textContent: s }));
      return tr;
    }),
  );
}

async function challenges() {
  const list = await api('GET', '/api/token/challenges');
  $('challenges').replaceChildren(
    ...list.body.challenges.map((c: any) => {
      const tr = document.createElement('tr');
      tr.dataset.challenge = c.challenge_id;
      tr.innerHTML = `<td>${c.name}</td><td>${c.account_size.toLocaleString()}</td><td>${fmt(c.entry_fee)}</td><td class="peg">-</td><td><button>Buy</button></td>`;
      tr.querySelector('button')!.addEventListener('click', async () => {
        const r = await api('POST', '/api/token/challenge/buy', { challenge_id: c.challenge_id, user_id: user });
        if (r.status === 200) {
          say(`bought ${c.name}: broker account ${r.body.broker_account}`);
          addReceipt(r.body.receipt_hash, 'challenge_purchase');
          const peg = await api('GET', `/api/token/peg/${c.challenge_id}`);
          if (peg.status === 200) tr.querySelector('.peg')!.textContent = peg.body.peg_rate;
        } else say(r.body?.error?.message ?? `buy: ${r.status}`);
        await refresh();
      });
      if (token) void api('GET', `/api/token/peg/${c.challenge_id}`).then((p) => p.status === 200 && (tr.querySelector('.peg')!.textContent = p.body.peg_rate));
      return tr;
    }),
  );
}

$('onramp').addEventListener('submit', async (e) => {
  e.preventDefault();
  const res = await fetch('/api/token/onramp', {
    method: 'POST',
    headers: { ...auth(), accept: 'application/json', 'content-type': 'application/json', 'idempotency-key': key() },
    body: JSON.stringify({ amount_krw: Number(($('krw') as HTMLInputElement).value), method: ($('method') as HTMLSelectElement).value }),
  });
  const body = await res.json();
  if (res.ok && body.location) location.href = body.location;
  else say(body.error?.message ?? 'on-ramp refused');
});

$('payout').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await api('POST', '/api/token/payout/request', { week: ($('week') as HTMLInputElement).value });
  if (r.status === 200) {
    say(`payout ${r.body.status}: ${fmt(r.body.amount)} tokens`);
    if (r.body.receipt_hash) addReceipt(r.body.receipt_hash);
  } else say(r.body?.error?.message ?? `payout: ${r.status}`);
  await refresh();
});

void challenges().then(refresh);
