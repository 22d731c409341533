import jsQR from 'jsqr';
import { Session, mountSignIn } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { problemText } from '../common/api.js';
import { LiveTopics } from '../common/live.js';
import { byId as $, el } from '../common/ui.js';
import { OfflineDoor, type OfflineAnswer } from './offline.js';
import { kstTime } from '../common/time.js';

interface CheckInEvent {
  type: 'checkin';
  scan_id?: string;
  list_id?: string;
  reservation_id: string;
  code: string;
  show_id: string;
  show_name: string;
  seat: string;
  at: string;
  scanner: string;
  gate: string | null;
}
interface Brief { reservation_id: string; code: string; show_id: string; show_name: string; seat: string; status: string; holder?: string | null }
interface CheckInList { id: string; name: string; is_default: boolean }
/** An entry, exit or undo on one show's door (topic door:<show>). */
interface DoorEvent { type: 'entry' | 'exit' | 'revert'; show_id: string; list_id: string; code: string; seat: string; scan: { id: string; at: string; scanner: string; gate: string | null; reverted: { reason: string; by: string } | null } }
type Answer =
  | { status: 'ok'; replayed: boolean; ticket: Brief; checkin: { at: string; scanner: string; gate: string | null; id: string; type: 'entry' | 'exit'; list_id: string }; list: { id: string; name: string } }
  | { error: { code: string; message: string; details?: any } };

// The code alphabet of docs/ticket.md: digits 2-9, capitals without I, L, O.
const CODE_IN_TEXT = /TK-?[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}/;
const time = (iso: string) => kstTime(iso);

// ---- who am I: a scanner device token kept in this browser (pretixSCAN's model) -------------
// Staff sign in once and register the device for a gate; the device token then identifies the
// scanner and its gate on every check-in (the server takes them from the token).
const session = new Session('scan:token', localStorage);
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)
const scannerInput = $<HTMLInputElement>('scanner');
const gateInput = $<HTMLInputElement>('gate');
scannerInput.value = localStorage.getItem('scan:scanner') ?? `scanner-${Math.random().toString(36).slice(2, 6)}`;
gateInput.value = localStorage.getItem('scan:gate') ?? '';
// the names typed for the device stay on it, also before it is registered
for (const [input, key] of [[scannerInput, 'scan:scanner'], [gateInput, 'scan:gate']] as const) {
  for (const ev of ['input', 'change']) input.addEventListener(ev, () => localStorage.setItem(key, input.value.trim()));
}
mountSignIn($('signin'), session, 'staff');
session.onChange((me) => {
  const device = me?.kind === 'device';
  $('signin').hidden = device;
  $('register').hidden = !me || device;
  $('device').hidden = !device;
  document.body.dataset.auth = device ? 'device' : me ? 'staff' : 'none';
  if (device) $('device-label').textContent = `${me!.name} @ ${me!.gate ?? ''}`;
  live.reauthenticate();
  if (me) {
    door.resume();
    void door.sync(localStorage.getItem('scan:show') ?? undefined, currentList());
  } else if (!session.token) void door.wipe();
  if (me) void loadRecent().catch(() => undefined);
  if (me) void loadCount().catch(() => undefined);
  if (me) void loadLists().catch(() => undefined);
  undoBox.hidden = true;
});
$('register').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const name = scannerInput.value.trim();
  const gate = gateInput.value.trim();
  localStorage.setItem('scan:scanner', name);
  localStorage.setItem('scan:gate', gate);
  $('register-error').textContent = '';
  void (async () => {
    let body: { token: string };
    try {
      body = await session.api.post('/api/auth/devices', { body: { gate, name } });
    } catch (err) {
      $('register-error').textContent = problemText(err);
      return;
    }
    // the staff member's own token is not kept on a door device
    await session.signOut();
    await session.adopt(body.token);
  })();
});
$('forget-device').addEventListener('click', () => void session.signOut());

// ---- feedback: colour, sound, vibration -----------------------------------------------------
let audio: AudioContext | undefined;
function beep(ok: boolean): void {
  try {
    audio ??= new AudioContext();
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.frequency.value = ok ? 1046 : 220;
    osc.type = ok ? 'sine' : 'square';
    gain.gain.value = 0.08;
    osc.connect(gain).connect(audio.destination);
    osc.start();
    osc.stop(audio.currentTime + (ok ? 0.12 : 0.45));
  } catch {
    // no audio: colour and text still tell
  }
  navigator.vibrate?.(ok ? 80 : [200, 80, 200]);
}

const TITLES: Record<string, string> = {
  ok: '입장 확인 ✓ OK',
  already_redeemed: '이미 입장함 · already checked in',
  canceled: '취소된 티켓 · cancelled',
  invalid: '없는 코드 · unknown code',
  invalid_body: '코드 형식 오류 · malformed code',
  rate_limited: '잠시 후 다시 · too many tries',
  exit: '퇴장 확인 · exit OK',
  reverted: '되돌림 · scan undone',
  product: '이 명단이 아님 · not on this list',
  invalid_time: '입장 시간 아님 · outside the list\'s hours',
  not_inside: '안에 없음 · not inside (no exit)',
  device_not_on_list: '이 기기는 이 명단 불가 · device not on this list',
  unauthorized: '로그인 필요 · sign in first',
  invalid_token: '다시 로그인 · sign in again',
  error: '오류 · error',
};

function show(result: string, detail: string, how: { offline?: boolean; started?: number } = {}): void {
  const box = $('result');
  box.dataset.result = result === 'invalid_body' ? 'invalid' : result;
  box.dataset.offline = how.offline ? 'true' : 'false';
  // from the scan to the answer on screen, in ms (the offline answer must be well under 100)
  if (how.started !== undefined) box.dataset.ms = (performance.now() - how.started).toFixed(1);
  $('result-title').textContent = TITLES[result] ?? result;
  $('result-detail').textContent = detail;
  box.classList.remove('flash');
  void box.offsetWidth;
  box.classList.add('flash');
  // after the answer is on screen: making the first AudioContext can take a moment
  window.setTimeout(() => beep(result === 'ok'), 0);
}

// ---- check-in -------------------------------------------------------------------------------
/**
 * One scan, one nonce: the same code seen again by this scanner within SAME_SCAN_MS (a QR code
 * held in front of the camera, a retry after a lost answer) reuses the first attempt's nonce, so
 * the server answers with that success again instead of "already checked in".
 */
const SAME_SCAN_MS = 30_000;
const recentScans = new Map<string, { nonce: string; at: number }>();
function nonceFor(code: string, scanner: string): { nonce: string; again: boolean } {
  const now = Date.now();
  for (const [k, v] of recentScans) if (now - v.at > SAME_SCAN_MS) recentScans.delete(k);
  const key = `${scanner}\u0000${code}`;
  const seen = recentScans.get(key);
  if (seen) return { nonce: seen.nonce, again: true };
  const nonce = crypto.randomUUID();
  recentScans.set(key, { nonce, at: now });
  return { nonce, again: false };
}

// ---- offline mode: the show's signed list on the device, a queue of offline check-ins ----------
// the door's two calls (its list, its queue's upload) through the client, answered whatever their status
const door = new OfflineDoor(async (url, init = {}) => {
  const method = (init.method ?? (init.body === undefined ? 'GET' : 'POST')) as 'GET' | 'POST';
  const res = await session.api.response(method, url as never, { body: init.body, headers: init.headers, signal: AbortSignal.timeout(15_000), answerAll: true } as never);
  // a refused token: the page learns who it is (nobody), as after any 401
  if (res.status === 401) void session.restore().catch(() => undefined);
  return res;
}, renderOffline);

/** Normalises a typed or scanned code as the hub does (docs/ticket.md): "TK-" and 8 characters. */
function normalCode(input: string): string {
  const s = input.trim().toUpperCase().replace(/\s+/g, '');
  if (/^TK[^-]/.test(s) && s.length === 10) return `TK-${s.slice(2)}`;
  if (s.length === 8 && !s.startsWith('TK-')) return `TK-${s}`;
  return s;
}

async function answerOffline(input: string, source: 'camera' | 'manual', nonce: string, started: number): Promise<void> {
  const code = normalCode(input);
  const a: OfflineAnswer | undefined = door.answer(code, source, nonce);
  const how = { offline: true, started };
  if (!a) return show('error', '서버에 연결할 수 없고 오프라인 명단이 없습니다 · network error, no offline list', how);
  const tag = ' · 오프라인 (offline)';
  if (a.result === 'ok') {
    show('ok', `${code} · ${door.show?.name ?? ''} · ${a.seat}${a.same ? ' · 같은 스캔 (same scan)' : ''}${tag}`, how);
    void a.saved?.catch(() => show('error', `${code} · 저장 실패 · could not keep the offline scan`));
    return;
  }
  if (a.result === 'already_redeemed') return show('already_redeemed', `${code} · ${a.at ? time(a.at) : ''} · ${a.seat}${tag}`, how);
  if (a.result === 'canceled') return show('canceled', `${code} · ${a.seat}${tag}`, how);
  if (a.result === 'product') return show('product', `${code} · ${a.seat} · ${door.checkInList?.name ?? ''}${tag}`, how);
  if (a.result === 'invalid_time') return show('invalid_time', `${code} · ${a.seat} · ${door.checkInList?.name ?? ''}${tag}`, how);
  show('invalid', `${code} · 이 공연 명단에 없음 · not in this show's list${tag}`, how);
}

function renderOffline(): void {
  const q = door.pending;
  document.body.dataset.list = door.wiped ? 'wiped' : door.ready ? 'ready' : 'none';
  document.body.dataset.offlineList = door.checkInList?.id ?? '';
  document.body.dataset.queue = String(q.length);
  $('queue-count').textContent = String(q.length);
  $('queue').replaceChildren(
    ...q.map((item) => el('li', { 'data-code': item.code, 'data-id': item.id }, el('time', { datetime: item.scanned_at }, time(item.scanned_at)), el('span', { class: 'code' }, item.code), ` · ${item.seat}`)),
  );
  const state = $('list-state');
  if (door.wiped) state.textContent = '이 기기의 오프라인 명단을 지웠습니다 (기기 해제됨) · offline list wiped: device no longer registered';
  else if (!door.ready) state.textContent = '오프라인 명단 없음 · no offline list yet';
  else state.textContent = `${door.show!.name} · ${door.size}장 · ${door.fetchedAt ? `${time(door.fetchedAt)} 갱신 · updated` : ''}`;
  const last = door.lastSync;
  const conflicts = last?.conflicts ?? [];
  $('sync-result').textContent = !last
    ? ''
    : `${time(last.at)} · 업로드 ${last.uploaded} · uploaded${conflicts.length ? ` · 충돌 ${conflicts.length} conflict(s): ${conflicts.map((c) => c.conflict?.code ?? c.id).join(', ')}` : ''}${last.error ? ` · ${last.error}` : ''}`;
  $('sync-result').dataset.conflicts = String(conflicts.length);
}

/** Upload and refresh while online: when the network returns, every 15 s, and on demand. */
function syncNow(): void {
  if (navigator.onLine && session.token) void door.sync(localStorage.getItem('scan:show') ?? undefined, currentList());
}
window.addEventListener('online', syncNow);
window.addEventListener('offline', () => renderOffline());
window.setInterval(syncNow, 15_000);
$('sync-now').addEventListener('click', syncNow);

let busy = false;
async function checkIn(code: string, source: 'camera' | 'manual'): Promise<void> {
  if (busy) return;
  busy = true;
  const device = session.me?.kind === 'device';
  // one nonce per scan of a mode: an exit ends the entry's "same scan" window (and the other way round),
  // so an entry after an exit is a new entry, not a repeat of the first
  const who = device ? session.me!.id : scannerInput.value.trim();
  recentScans.delete(`${who}\u0000${exitMode() ? 'entry' : 'exit'}:${code}`);
  const { nonce } = nonceFor(`${exitMode() ? 'exit' : 'entry'}:${code}`, who);
  const mode = exitMode() ? 'exit' : 'entry';
  const listId = currentList();
  const body = {
    code,
    source,
    nonce,
    ...(listId ? { list_id: listId } : {}),
    ...(mode === 'exit' ? { type: 'exit' as const } : {}),
    scanner: device ? undefined : scannerInput.value.trim() || undefined,
    gate: device ? undefined : gateInput.value.trim() || undefined,
  };
  const started = performance.now();
  try {
    // no network and a list on the device: the list answers, without trying the network
    if (door.ready && !navigator.onLine) {
      if (exitMode()) return show('error', '퇴장은 온라인에서만 · exits need the network');
      return await answerOffline(code, source, nonce, started);
    }
    let res: Response | undefined;
    if (door.ready) {
      // one try: without an answer the list answers; the scan is queued with this nonce, so a
      // check-in the hub did make before the answer was lost is the same check-in, not a conflict
      res = await session.api.response('POST', '/api/checkin', { body, signal: AbortSignal.timeout(4000), answerAll: true }).catch(() => undefined);
      if ((!res || res.status >= 502) && exitMode()) return show('error', '퇴장은 온라인에서만 · exits need the network');
      if (!res || res.status >= 502) return await answerOffline(code, source, nonce, started);
    }
    for (let attempt = 0; attempt < 3 && !res; attempt++) {
      try {
        res = await session.api.response('POST', '/api/checkin', { body, answerAll: true });
      } catch {
        await new Promise((r) => setTimeout(r, 300 * (attempt + 1)));
      }
    }
    if (!res) return show('error', '서버에 연결할 수 없습니다 · network error');
    const a = (await res.json()) as Answer;
    if ('status' in a && a.status === 'ok') {
      if (a.checkin.type === 'entry') door.checkedInOnline(a.ticket.code, a.checkin.at);
      followShow(a.ticket.show_id, a.ticket.show_name);
      lastScan = { show_id: a.ticket.show_id, list_id: a.checkin.list_id, reservation_id: a.ticket.reservation_id, scan_id: a.checkin.id, code: a.ticket.code };
      // staff may undo a wrong scan; a door device asks staff
      undoBox.hidden = session.me?.kind === 'device';
      const who = a.ticket.holder ? `${a.ticket.holder} · ` : '';
      return show(a.checkin.type === 'exit' ? 'exit' : 'ok', `${who}${a.ticket.seat} · ${a.ticket.code} · ${a.list.name}${a.replayed ? ' · 같은 스캔 (same scan)' : ''}`);
    }
    if ('error' in a) {
      const e = a.error;
      undoBox.hidden = true;
      const t = e.details?.ticket as Brief | undefined;
      if (t && (e.code === 'product' || e.code === 'invalid_time' || e.code === 'not_inside')) {
        return show(e.code, `${t.holder ? `${t.holder} · ` : ''}${t.seat} · ${t.code} · ${e.message}`);
      }
      if (e.code === 'device_not_on_list') return show(e.code, e.message);
      if (e.code === 'already_redeemed') {
        const f = e.details.first_checkin;
        return show(e.code, `${t?.holder ? `${t.holder} · ` : ''}${e.details.ticket.seat} · ${e.details.ticket.code} · ${time(f.at)} · ${f.scanner}${f.gate ? ` @ ${f.gate}` : ''}`);
      }
      if (e.code === 'canceled') return show(e.code, `${e.details.ticket.code} · ${e.details.ticket.seat}`);
      if (e.code === 'rate_limited') return show(e.code, `${e.details.retry_after_s}s`);
      if (e.code === 'unauthorized' || e.code === 'invalid_token' || e.code === 'forbidden') {
        if (res.status === 401) void session.restore();
        return show(e.code === 'forbidden' ? 'error' : e.code, e.message);
      }
      return show(e.code === 'invalid' || e.code === 'invalid_body' ? e.code : 'error', `${code} · ${e.message}`);
    }
    show('error', `HTTP ${res.status}`);
  } finally {
    busy = false;
  }
}

$('manual').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>('code');
  const code = input.value.trim().toUpperCase();
  if (!code) return;
  void checkIn(code, 'manual').then(() => {
    input.value = '';
    input.focus();
  });
});

// ---- camera: BarcodeDetector when the browser has it, else jsQR on video frames ---------------
interface Detector { detect(source: CanvasImageSource): Promise<{ rawValue: string }[]> }
const video = $<HTMLVideoElement>('video');
const cameraBox = document.querySelector<HTMLElement>('.camera')!;
const cameraState = $('camera-state');
const canvas = document.createElement('canvas');
const ctx2d = canvas.getContext('2d', { willReadFrequently: true })!;
let stream: MediaStream | undefined;
let detector: Detector | undefined;
let lastCode = '';
let lastAt = 0;

function setCamera(state: 'off' | 'on' | 'unavailable', text: string): void {
  cameraBox.dataset.state = state;
  cameraState.textContent = state === 'unavailable' ? '' : text;
  $('camera-toggle').textContent = state === 'on' ? '카메라 끄기 · stop camera' : '카메라 켜기 · start camera';
  const help = $('camera-help');
  help.hidden = state !== 'unavailable';
  if (state === 'unavailable') {
    $('camera-help-text').textContent = text;
    $<HTMLInputElement>('code').focus();
  }
}

/** What went wrong with the camera, in words a door volunteer understands. */
function cameraProblem(err: unknown): string {
  const name = (err as { name?: string })?.name ?? '';
  if (name === 'NotAllowedError' || name === 'SecurityError')
    return '카메라 사용이 허용되지 않았습니다. 브라우저 주소창의 카메라 권한을 허용하거나, 아래에 티켓 코드를 직접 입력하세요.';
  if (name === 'NotFoundError' || name === 'OverconstrainedError') return '이 기기에서 카메라를 찾지 못했습니다. 아래에 티켓 코드를 직접 입력하세요.';
  if (name === 'NotReadableError' || name === 'AbortError')
    return '다른 앱이 카메라를 쓰고 있습니다. 그 앱을 닫고 다시 켜거나, 아래에 티켓 코드를 직접 입력하세요.';
  return '카메라를 켤 수 없습니다. 아래에 티켓 코드를 직접 입력하세요.';
}
const NO_CAMERA = '이 브라우저에서는 카메라를 쓸 수 없습니다 (https 주소가 필요합니다). 아래에 티켓 코드를 직접 입력하세요.';

async function decodeFrame(): Promise<string | undefined> {
  if (detector) {
    const found = await detector.detect(video);
    return found[0]?.rawValue;
  }
  const w = video.videoWidth;
  const h = video.videoHeight;
  if (!w || !h) return undefined;
  const scale = Math.min(1, 640 / Math.max(w, h));
  canvas.width = Math.round(w * scale);
  canvas.height = Math.round(h * scale);
  ctx2d.drawImage(video, 0, 0, canvas.width, canvas.height);
  const img = ctx2d.getImageData(0, 0, canvas.width, canvas.height);
  return jsQR(img.data, img.width, img.height, { inversionAttempts: 'dontInvert' })?.data;
}

async function scanLoop(): Promise<void> {
  while (stream) {
    try {
      const text = await decodeFrame();
      const m = text ? CODE_IN_TEXT.exec(text.toUpperCase()) : null;
      if (m) {
        const code = m[0].includes('-') ? m[0] : `TK-${m[0].slice(2)}`;
        const now = Date.now();
        // the same code in front of the camera counts once every 4 s
        if (code !== lastCode || now - lastAt > 4000) {
          lastCode = code;
          lastAt = now;
          await checkIn(code, 'camera');
        }
      }
    } catch {
      // a bad frame: try the next one
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function startCamera(): Promise<void> {
  if (!navigator.mediaDevices?.getUserMedia) return setCamera('unavailable', NO_CAMERA);
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
  } catch (err) {
    stream = undefined;
    return setCamera('unavailable', cameraProblem(err));
  }
  const BD = (globalThis as { BarcodeDetector?: new (o: { formats: string[] }) => Detector }).BarcodeDetector;
  try {
    detector = BD ? new BD({ formats: ['qr_code'] }) : undefined;
  } catch {
    detector = undefined;
  }
  video.srcObject = stream;
  await video.play().catch(() => undefined);
  setCamera('on', detector ? 'BarcodeDetector' : 'jsQR');
  void scanLoop();
}

function stopCamera(): void {
  stream?.getTracks().forEach((t) => t.stop());
  stream = undefined;
  video.srcObject = null;
  setCamera('off', '');
}

$('camera-toggle').addEventListener('click', () => (stream ? stopCamera() : void startCamera()));
setCamera('off', '');

// ---- live list: every scanner's check-ins ----------------------------------------------------
const list = $('live');
const seen = new Set<string>();
function addCheckIn(ev: CheckInEvent, fresh: boolean): void {
  const key = ev.scan_id ?? ev.reservation_id;
  if (seen.has(key)) return;
  seen.add(key);
  const li = el(
    'li',
    { 'data-code': ev.code, 'data-type': 'entry', ...(ev.scan_id ? { 'data-scan': ev.scan_id } : {}), class: fresh ? 'fresh' : '' },
    el('time', { datetime: ev.at }, time(ev.at)),
    el('span', {}, el('span', { class: 'code' }, ev.code), ` · ${ev.show_name} · ${ev.seat}`),
    el('span', { class: 'who' }, `${ev.scanner}${ev.gate ? ` @ ${ev.gate}` : ''}`),
  );
  if (fresh) followShow(ev.show_id, ev.show_name);
  if (fresh) list.prepend(li);
  else list.append(li);
  $('count').textContent = `${seen.size}`;
}

// ---- the door counter: checked in over tickets of the show this door scans --------------------
// The show is the one of the last check-in (kept on the device); the hub counts it, so every gate
// sees the same figure.
let counted: number | undefined;
function followShow(id: string | undefined, name: string): void {
  if (!id) return;
  if (localStorage.getItem('scan:show') !== id) {
    localStorage.setItem('scan:show', id);
    localStorage.setItem('scan:show-name', name);
    void loadLists().then(() => door.sync(id, currentList()));
  }
  window.clearTimeout(counted);
  counted = window.setTimeout(() => void loadCount(), 300);
}
window.setInterval(() => document.visibilityState === 'visible' && void loadCount(), 10_000);
async function loadCount(): Promise<void> {
  const id = localStorage.getItem('scan:show');
  if (!id || !session.token) return;
  const c = await session.api.get('/api/shows/:id/counts', { params: { id } }).catch(() => undefined);
  if (!c) return;
  $('door-show').textContent = localStorage.getItem('scan:show-name') ?? '';
  $('door-in').textContent = String(c.checked_in);
  $('door-total').textContent = String(c.tickets);
  $('door-count').hidden = false;
  await loadInside();
}

// ---- the check-in list this door scans on, entry or exit, people inside, undo -------------------
// The list is picked per show and kept on the device (`scan:list:<show>`); a link may name the show
// and list (/scan?show=s_…&list=cl_…). The show's door topic brings every entry, exit and undo.
const listSelect = $<HTMLSelectElement>('list');
const undoBox = $<HTMLFormElement>('undo');
let lastScan: { show_id: string; list_id: string; reservation_id: string; scan_id: string; code: string } | undefined;
const exitMode = () => $<HTMLInputElement>('mode-exit').checked;
const currentList = () => (listSelect.value && !$('door').hidden ? listSelect.value : undefined);
const linked = new URLSearchParams(location.search);
if (linked.get('show')) localStorage.setItem('scan:show', linked.get('show')!);
if (linked.get('show') && linked.get('list')) localStorage.setItem(`scan:list:${linked.get('show')}`, linked.get('list')!);
const following = new Set<string>();
async function loadLists(): Promise<void> {
  const id = localStorage.getItem('scan:show');
  if (!id || !session.token) return;
  const answer = await session.api.get('/api/shows/:id/lists', { params: { id } }).catch(() => undefined);
  if (!answer) return;
  const { lists, default_list_id } = answer;
  const kept = localStorage.getItem(`scan:list:${id}`);
  listSelect.replaceChildren(...lists.map((l) => el('option', { value: l.id }, `${l.name}${l.is_default ? ' (기본 · default)' : ''}`)));
  listSelect.value = lists.some((l) => l.id === kept) ? kept! : default_list_id;
  $('door').hidden = false;
  document.body.dataset.checkinList = listSelect.value;
  // the offline set is the picked list's own (its tickets and rules)
  if (navigator.onLine && door.checkInList?.id !== listSelect.value) void door.sync(id, listSelect.value);
  if (!following.has(id)) {
    following.add(id);
    live.on(`door:${id}`, (data) => onDoorEvent(data as DoorEvent), () => void loadInside());
  }
  await loadInside();
}
listSelect.addEventListener('change', () => {
  const id = localStorage.getItem('scan:show');
  if (id) localStorage.setItem(`scan:list:${id}`, listSelect.value);
  document.body.dataset.checkinList = listSelect.value;
  void loadInside();
  // the offline set follows the list: its own tickets and rules
  if (id && navigator.onLine) void door.sync(id, listSelect.value);
});
async function loadInside(): Promise<void> {
  const id = localStorage.getItem('scan:show');
  if (!id || !session.token) return;
  const d = await session.api.get('/api/shows/:id/door', { params: { id } }).catch(() => undefined);
  if (!d) return;
  $('inside-show').textContent = String(d.inside);
  $('inside-list').textContent = String(d.lists.find((l) => l.id === listSelect.value)?.inside ?? 0);
}
function onDoorEvent(ev: DoorEvent): void {
  if (ev.show_id !== localStorage.getItem('scan:show')) return;
  void loadInside();
  if (ev.type === 'entry') return; // listed from the check-ins topic
  const key = `${ev.type}:${ev.scan.id}`;
  if (seen.has(key)) return;
  seen.add(key);
  const text = ev.type === 'exit' ? ` · ${ev.seat} · 퇴장 · exit` : ` · ${ev.seat} · 되돌림 · undone: ${ev.scan.reverted?.reason ?? ''}`;
  list.prepend(
    el(
      'li',
      { 'data-code': ev.code, 'data-type': ev.type, 'data-scan': ev.scan.id, class: 'fresh' },
      el('time', { datetime: ev.scan.at }, time(ev.scan.at)),
      el('span', {}, el('span', { class: 'code' }, ev.code), text),
      el('span', { class: 'who' }, ev.type === 'revert' ? `${ev.scan.reverted?.by ?? ''}` : `${ev.scan.scanner}${ev.scan.gate ? ` @ ${ev.scan.gate}` : ''}`),
    ),
  );
  if (ev.type === 'revert') {
    for (const li of list.querySelectorAll<HTMLElement>(`li[data-scan="${CSS.escape(ev.scan.id)}"]:not([data-type="revert"])`)) li.dataset.reverted = 'true';
    // the banner still shows the scan another scanner just undid: say so
    if (lastScan?.scan_id === ev.scan.id) {
      undoBox.hidden = true;
      show('reverted', `${ev.code} · ${ev.seat} · ${ev.scan.reverted?.reason ?? ''}`);
    }
  }
}
undoBox.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const s = lastScan;
  const reason = $<HTMLInputElement>('undo-reason').value.trim();
  if (!s || !reason) return;
  void (async () => {
    let body;
    try {
      body = await session.api.post('/api/shows/:id/lists/:list/revert', { params: { id: s.show_id, list: s.list_id }, body: { reservation_id: s.reservation_id, scan_id: s.scan_id, reason } });
    } catch (err) {
      return show('error', problemText(err));
    }
    undoBox.hidden = true;
    $<HTMLInputElement>('undo-reason').value = '';
    lastScan = undefined;
    show('reverted', `${s.code} · ${body.ticket.seat} · ${reason}`);
  })();
});

async function loadRecent(): Promise<void> {
  if (!session.token) return;
  const { checkins } = (await session.api.get('/api/checkins', { query: { limit: 100 } })) as { checkins: CheckInEvent[] };
  for (const ev of checkins) addCheckIn(ev, false);
}

const live = new LiveTopics(undefined, () => session.token, () => void session.restore());
// after a reconnect the hub sends the check-ins missed meanwhile; when it no longer knows them
// (history lost, away too long) the list is reloaded instead
live.on('checkins', (data) => addCheckIn(data as CheckInEvent, true), () => void loadRecent().catch(() => undefined));
live.onConnection((on) => {
  $('conn').classList.toggle('on', on);
  document.body.dataset.live = on ? 'on' : 'off';
});
void door.load().catch(() => undefined);
void session
  .restore()
  .catch(() => undefined)
  .finally(() => {
    void loadCount();
    void loadLists().catch(() => undefined);
    document.body.dataset.ready = 'true';
  });
if (!navigator.mediaDevices?.getUserMedia) setCamera('unavailable', NO_CAMERA);
$('camera-help-manual').addEventListener('click', () => $<HTMLInputElement>('code').focus());
