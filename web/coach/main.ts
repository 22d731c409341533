/**
 * The coaching page: the card of the day, the vision (or a prompt to start a conversation), the
 * actions in their phase colours. A toggle flips at once (optimistic) and stays flipped when the
 * call fails; a first completion plays the reward animation. A failed card call shows no card.
 */

type Phase = '티' | '옴' | '타' | '음';
type Status = '대기' | '진행' | '완료';
interface Action { id: string; title: string; phase: Phase; status: Status; reward: number }
interface Profile { vision?: string; points: number; actions: Action[] }
interface Nudge { date: string; title: string; message: string; action: Action }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const KEY = 'maru:coach:owner';
const params = new URLSearchParams(location.search);
// the personal link staff send (/coach#owner=<header>): the fragment never reaches the server, and
// it is taken off the address at once so it stays out of the history and of shared screenshots
const fromLink = new URLSearchParams(location.hash.slice(1)).get('owner');
if (fromLink !== null) history.replaceState(null, '', location.pathname + location.search);
let owner = fromLink ?? params.get('owner') ?? localStorage.getItem(KEY) ?? '';
// another owner's link opened in this tab changes only the fragment: take it as a new page
window.addEventListener('hashchange', () => {
  if (new URLSearchParams(location.hash.slice(1)).has('owner')) location.reload();
});

const headers = () => ({ 'x-service-owner': owner });

function setPoints(n: number): void {
  $('points').textContent = `${n.toLocaleString('ko-KR')}점`;
}

function playReward(n: number): void {
  const r = $('reward');
  r.textContent = `+${n}점 🎉`;
  r.hidden = false;
  r.classList.remove('play');
  void r.offsetWidth; // restart the animation
  r.classList.add('play');
  r.addEventListener('animationend', () => (r.hidden = true), { once: true });
}

function actionItem(a: Action): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset.phase = a.phase;
  li.dataset.status = a.status;
  li.dataset.action = a.id;
  const phase = document.createElement('span');
  phase.className = 'phase';
  phase.textContent = a.phase;
  const title = document.createElement('span');
  title.className = 'title';
  title.textContent = a.title;
  const pts = document.createElement('span');
  pts.className = 'reward-pts';
  pts.textContent = `${a.reward}점`;
  const btn = document.createElement('button');
  btn.type = 'button';
  btn.className = 'toggle';
  const label = () => {
    btn.textContent = li.dataset.status === '완료' ? '완료 ✓' : '완료하기';
    btn.setAttribute('aria-pressed', String(li.dataset.status === '완료'));
  };
  label();
  btn.onclick = async () => {
    // optimistic: flip now; the flipped state stays even when the call fails
    const next: Status = li.dataset.status === '완료' ? '진행' : '완료';
    li.dataset.status = next;
    label();
    try {
      const res = await fetch('/api/coach/action', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers() },
        body: JSON.stringify({ actionId: a.id, status: next }),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const out = (await res.json()) as { rewarded: boolean; reward: number; points: number };
      setPoints(out.points);
      if (out.rewarded) playReward(out.reward);
      $('error').hidden = true;
    } catch {
      li.dataset.sync = 'failed';
    }
  };
  li.append(phase, title, pts, btn);
  return li;
}

async function loadNudge(): Promise<void> {
  try {
    const res = await fetch('/api/coach/nudge', { headers: headers() });
    if (res.status !== 200) return; // 204 or a failure: no card, the display stays as it is
    const n = (await res.json()) as Nudge;
    $('nudge').dataset.phase = n.action.phase;
    $('nudge-date').textContent = n.date;
    $('nudge-title').textContent = n.title;
    $('nudge-message').textContent = n.message;
    $('nudge').hidden = false;
  } catch {
    // no card
  }
}

async function loadProfile(): Promise<void> {
  const res = await fetch('/api/coach/profile', { headers: headers() });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    $('error').textContent = res.status === 404 ? '등록되지 않은 코칭 ID예요.' : `불러오지 못했어요 (${body?.error?.message ?? res.status}).`;
    $('error').hidden = false;
    if (res.status === 401 || res.status === 404) $('owner-form').hidden = false;
    return;
  }
  const p = (await res.json()) as Profile;
  $('vision').textContent = p.vision ?? '';
  $('vision').hidden = !p.vision;
  $('vision-prompt').hidden = Boolean(p.vision);
  setPoints(p.points);
  $('actions').replaceChildren(...p.actions.map(actionItem));
}

$('dismiss').addEventListener('click', () => ($('nudge').hidden = true)); // client-side only
$('owner-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  owner = $<HTMLInputElement>('owner').value.trim();
  localStorage.setItem(KEY, owner);
  $('owner-form').hidden = true;
  $('error').hidden = true;
  void Promise.all([loadProfile(), loadNudge()]);
});

// ready (for the tests) once the first view is drawn: the profile and its card, else the owner form
const ready = () => void (document.body.dataset.ready = 'true');
if (owner) {
  localStorage.setItem(KEY, owner);
  void Promise.all([loadProfile(), loadNudge()]).finally(ready);
} else {
  $('owner-form').hidden = false;
  ready();
}
export {};
