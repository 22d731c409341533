import { kstTime } from '../common/time.js';

/**
 * What the page tells about its sockets and its saves. The connection indicator follows the live
 * sockets the page really has: the topics socket (/ws) always, and the co-editing socket (/yjs) while
 * a document is open for editing; the worse of the two is shown. A failed save stays shown as
 * failed until a save succeeds.
 */
export type SocketState = 'connecting' | 'live' | 'offline';

const CONN_TEXT: Record<SocketState, [string, string]> = {
  connecting: ['연결 중', 'connecting'],
  live: ['실시간', 'live'],
  offline: ['오프라인, 다시 연결 중', 'offline, reconnecting'],
};

export class ConnectionIndicator {
  private topics: SocketState = 'connecting';
  private coedit: SocketState | undefined;

  constructor(private readonly host: HTMLElement) {
    this.draw();
  }

  /** The /ws socket opened (true) or closed (false; it reconnects by itself). */
  setTopics(open: boolean): void {
    this.topics = open ? 'live' : 'offline';
    this.draw();
  }

  /** The co-editing socket of the open document; undefined: no document open for editing. */
  setCoedit(state: SocketState | undefined): void {
    this.coedit = state;
    this.draw();
  }

  get state(): SocketState {
    const all = [this.topics, this.coedit];
    return all.includes('offline') ? 'offline' : all.includes('connecting') ? 'connecting' : 'live';
  }

  private draw(): void {
    const s = this.state;
    const [ko, en] = CONN_TEXT[s];
    this.host.dataset.state = s;
    this.host.classList.toggle('on', s === 'live');
    this.host.textContent = `${ko} · ${en}`;
    const which = this.coedit === undefined ? '실시간 알림 · live updates' : '실시간 알림과 공동 편집 · live updates and co-editing';
    this.host.title = s === 'live'
      ? `${which}: 연결됨 · connected`
      : s === 'offline'
        ? '연결이 끊겼습니다. 다시 연결하는 중이며, 그동안 다른 사람의 변경은 보이지 않습니다 · the connection dropped; reconnecting, and others\' changes do not arrive meanwhile'
        : `${which}: 연결 중 · connecting`;
  }
}

export type SaveState = 'idle' | 'saving' | 'saved' | 'failed' | 'conflict';

/** The state of "save version", shown beside the button; a failure stays until a save succeeds. */
export class SaveIndicator {
  private current: SaveState = 'idle';

  constructor(private readonly host: HTMLElement) {
    this.reset();
  }

  get state(): SaveState {
    return this.current;
  }

  /** A new document: nothing saved or failed yet. */
  reset(): void {
    this.set('idle', '');
  }

  saving(): void {
    // a failure (or an unresolved conflict) is not hidden by the next attempt, only by its success
    if (this.current === 'failed' || this.current === 'conflict') return;
    this.set('saving', '저장 중 · saving');
  }

  saved(version: number, at: number): void {
    this.set('saved', `v${version} 저장됨 ${kstTime(at, { seconds: false })} · saved`);
  }

  failed(why: string): void {
    this.set('failed', `저장 실패 · save failed: ${why}`);
  }

  conflict(version: number): void {
    this.set('conflict', `저장 안 됨: 서버에 v${version}이 먼저 저장됨, 병합하세요 · not saved: v${version} was saved first, merge below`);
  }

  private set(state: SaveState, text: string): void {
    this.current = state;
    this.host.dataset.state = state;
    this.host.textContent = text;
    this.host.hidden = state === 'idle';
  }
}
