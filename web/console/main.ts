/**
 * The operator console (docs/console.md): every hub process's state, live from the SSE stream
 * /api/console/live; an identity's connections with a disconnect button each and "disconnect all"
 * (optionally revoking its tokens); the outbox's waiting deliveries with a retry button.
 */
import { problemText, type Answer } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { byId as $, el, kst } from '../common/ui.js';

type State = Answer<'GET', '/api/console/state'>;
const session = new Session('console:token');
/** Times as every page writes them (web/common/time.ts): KST, the zone named. */
const when = (at: string | number) => kst(typeof at === 'number' ? at : Date.parse(at), { seconds: true });
const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
const uptime = (s: number) => (s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`);
const ready = () => void (document.body.dataset.ready = 'true');

const fail = (err: unknown) => {
  $('result').textContent = '';
  $('error').textContent = problemText(err);
};
const clear = () => {
  $('error').textContent = '';
  $('result').textContent = '';
};

function draw(s: State): void {
  $('live-status').textContent = `실시간 · live — ${when(s.at)} (${s.node})`;
  $('nodes').replaceChildren(
    ...s.nodes.map((n) =>
      el(
        'tr',
        { 'data-node': n.id },
        el('td', {}, el('code', {}, n.id)),
        el('td', {}, n.version),
        el('td', {}, uptime(n.uptime_s)),
        el('td', {}, `ws ${n.connections.sockets} · sse ${n.connections.streams}`),
        el('td', {}, `${mib(n.memory.rss)} (heap ${mib(n.memory.heap_used)})`),
        el('td', {}, `${n.jobs.running} running · ${n.jobs.waiting} waiting / ${n.jobs.queue_max}`),
      ),
    ),
  );
  $('topics').replaceChildren(
    ...(s.topics.length
      ? s.topics.map((t) =>
          el('tr', { 'data-topic': t.topic }, el('td', {}, el('code', {}, t.topic)), el('td', {}, String(t.subscribers)), el('td', {}, t.presence ? `${t.presence.clients} clients · ${t.presence.users} users` : '—')),
        )
      : [el('tr', {}, el('td', { colspan: '3', class: 'muted' }, '구독 없음 · no subscriptions'))]),
  );
  const o = s.queues.outbox;
  $('outbox').replaceChildren(
    ...o.destinations.map((d) =>
      el(
        'tr',
        { 'data-dest': d.dest },
        el('td', {}, d.dest),
        el('td', {}, String(d.pending)),
        el('td', {}, String(d.in_flight)),
        el('td', {}, String(d.retrying)),
        el('td', {}, String(d.held)),
        el('td', {}, d.oldest_at === null ? '—' : when(d.oldest_at)),
      ),
    ),
  );
  $('waiting').replaceChildren(
    ...(o.waiting.length
      ? o.waiting.map((w) => {
          const retry = el('button', { type: 'button', 'data-act': 'retry' }, '재시도 · retry');
          retry.addEventListener('click', () => void act(() => session.api.post('/api/console/outbox/:id/retry', { params: { id: w.id } }), `${w.id}: 재시도 요청됨 · retry asked`));
          return el(
            'tr',
            { 'data-delivery': w.id },
            el('td', {}, el('code', {}, w.id)),
            el('td', {}, w.dest),
            el('td', {}, String(w.attempts)),
            el('td', {}, w.held ? '보류 held' : w.due_at ? when(w.due_at) : '—'),
            el('td', {}, w.last_error ?? '—'),
            el('td', {}, retry),
          );
        })
      : [el('tr', {}, el('td', { colspan: '6', class: 'muted' }, '없음 · none'))]),
  );
  const st = s.store;
  const rows: [string, string][] = [
    ['kind', st.kind],
    ['role', st.role],
    ['replicas', `${st.replicas} online · writes wait for ${st.min_replicas}`],
    ['durability', st.durability],
    ...Object.entries(st.details),
  ];
  $('store').replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, el('code', {}, v))]));
}

let shownUser: string | undefined;

async function loadConnections(user: string): Promise<void> {
  const r = await session.api.get('/api/console/connections', { query: { user } });
  shownUser = user;
  $('conn-card').hidden = false;
  $('connections').replaceChildren(
    ...(r.connections.length
      ? r.connections.map((c) => {
          const cut = el('button', { type: 'button', class: 'reject', 'data-act': 'disconnect' }, '끊기 · disconnect');
          cut.addEventListener('click', () => void act(() => session.api.post('/api/console/connections/:id/disconnect', { params: { id: c.id } }), `${c.id}: 끊었습니다 · disconnected`));
          return el(
            'tr',
            { 'data-conn': c.id },
            el('td', {}, el('code', {}, c.id)),
            el('td', {}, `${c.kind} ${c.endpoint}`),
            el('td', {}, c.remote_address),
            el('td', {}, when(c.opened_at)),
            el('td', {}, c.topics.join(', ') || '—'),
            el('td', {}, cut),
          );
        })
      : [el('tr', { 'data-empty': 'true' }, el('td', { colspan: '6', class: 'muted' }, `${user}: 연결 없음 · no open connection`))]),
  );
  if (r.missing.length) $('error').textContent = `응답 없는 노드 · nodes that did not answer: ${r.missing.join(', ')}`;
}

async function act(call: () => Promise<unknown>, done: string): Promise<void> {
  clear();
  try {
    await call();
    $('result').textContent = done;
    if (shownUser) await loadConnections(shownUser);
  } catch (err) {
    fail(err);
  }
}

$('conn-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  clear();
  loadConnections($<HTMLInputElement>('conn-user').value.trim()).catch(fail);
});
$('disconnect-all').addEventListener('click', () => {
  if (!shownUser) return;
  const revoke = $<HTMLInputElement>('conn-revoke').checked;
  const user = shownUser;
  void act(
    () => session.api.post('/api/console/identities/:user/disconnect', { params: { user }, body: { revoke_tokens: revoke } }),
    `${shownUser}: 모든 연결을 끊었습니다${revoke ? ', 토큰 해지됨' : ''} · every connection ended${revoke ? ', tokens revoked' : ''}`,
  );
});

let live: EventSource | undefined;
function follow(token: string): void {
  live?.close();
  const es = new EventSource(`/api/console/live?access_token=${encodeURIComponent(token)}`); // a stream, not a call: EventSource
  live = es;
  es.addEventListener('state', (ev) => {
    draw(JSON.parse((ev as MessageEvent<string>).data) as State);
    ready();
  });
  // the operator's own token ended (revoked, expired): the session check shows the sign-in form
  es.addEventListener('closed', () => {
    es.close();
    void session.restore();
  });
  es.onerror = () => {
    $('live-status').textContent = '다시 연결 중 · reconnecting';
  };
}

session.onChange((me) => {
  const operator = !!me?.roles.includes('operator');
  $('board').hidden = !operator;
  $('need').hidden = operator;
  document.body.dataset.auth = operator ? 'operator' : me ? 'other' : 'none';
  if (operator && session.token) follow(session.token);
  else {
    live?.close();
    live = undefined;
    ready();
  }
});
mountSignIn($('signin'), session, 'operator');
void session.restore();
