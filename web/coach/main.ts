/**
 * The coaching page: the card of the day, the vision (or a prompt to start a conversation), the
 * actions in their phase colours. A toggle flips at once (optimistic) and stays flipped when the
 * call fails; a first completion plays the reward animation. A failed card call shows no card.
 */
import { ApiError, publicApi, problemText, type Answer } from '../common/api.js';
import { byId as $ } from '../common/ui.js';

type Profile = Answer<'GET', '/api/coach/profile'>;
type Action = Profile['actions'][number];
type Status = Action['status'];
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
    const next = li.dataset.status === '완료' ? '진행' : '완료';
    li.dataset.status = next;
    label();
    try {
      const out = await publicApi.post('/api/coach/action', { headers: headers(), body: { actionId: a.id, status: next } });
      setPoints(out.points);
      if (out.rewarded) playReward(out.reward);
      $('error').hidden = true;
      // the card of the day follows: the action done, it shows the next open one (or none)
      await loadNudge();
    } catch {
      li.dataset.sync = 'failed';
    }
  };
  li.append(phase, title, pts, btn);
  return li;
}

async function loadNudge(): Promise<void> {
  try {
    const n = await publicApi.get('/api/coach/nudge', { headers: headers() });
    // 204: every action is done, no card
    if (!n) return void ($('nudge').hidden = true);
    $('nudge').dataset.phase = n.action.phase;
    $('nudge').dataset.action = n.action.id;
    $('nudge-date').textContent = n.date;
    $('nudge-title').textContent = n.title;
    $('nudge-message').textContent = n.message;
    $('nudge').hidden = false;
  } catch {
    // no card
  }
}

async function loadProfile(): Promise<void> {
  let p: Profile;
  try {
    p = await publicApi.get('/api/coach/profile', { headers: headers() });
  } catch (err) {
    const status = err instanceof ApiError ? err.status : 0;
    $('error').textContent = status === 404 ? '등록되지 않은 코칭 ID예요.' : `불러오지 못했어요 (${problemText(err)}).`;
    $('error').hidden = false;
    if (status === 401 || status === 404) $('owner-form').hidden = false;
    return;
  }
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
