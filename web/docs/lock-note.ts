import { kst } from '../common/time.js';

/**
 * The note beside the editor about someone else's lock (docs/collab.md "Editor page"): who holds
 * it and until when (KST, the zone written), and, once it is gone, that it was released (or ran
 * out, or was broken by an operator) and when. Without it a held lock only turned the editor
 * read-only, which looked like a broken editor.
 */
export interface HeldLock {
  holder: string;
  holder_name?: string;
  expires_at: string;
}

export function showHeld(note: HTMLElement, lock: HeldLock): void {
  const who = lock.holder_name ?? lock.holder;
  const until = kst(lock.expires_at);
  note.hidden = false;
  note.dataset.state = 'locked';
  note.textContent =
    `${who} 님이 ${until}까지 이 문서를 잠갔습니다. 잠금이 풀릴 때까지 편집기는 읽기 전용입니다. · ` +
    `Locked by ${who} until ${until}: the editor is read-only until the lock is released.`;
}

/** `how`: the lock event's state (`released`, `expired`, `broken`), or undefined when the page only saw it gone. */
export function showReleased(note: HTMLElement, who: string, how: string | undefined, at: number, canEdit: boolean): void {
  const when = kst(at);
  const [ko, en] =
    how === 'expired'
      ? [`${who} 님의 잠금 시간이 ${when}에 끝났습니다`, `${who}'s lock ran out at ${when}`]
      : how === 'broken'
        ? [`운영자가 ${when}에 ${who} 님의 잠금을 풀었습니다`, `an operator broke ${who}'s lock at ${when}`]
        : [`${who} 님이 ${when}에 잠금을 풀었습니다`, `${who} released the lock at ${when}`];
  note.hidden = false;
  note.dataset.state = 'released';
  const next = canEdit ? ['이제 편집할 수 있습니다', 'you can edit now'] : ['편집하려면 편집자로 로그인하세요', 'sign in as an editor to edit'];
  note.textContent = `${ko}. ${next[0]}. · ${en}: ${next[1]}.`;
}

export function hideNote(note: HTMLElement): void {
  note.hidden = true;
  note.textContent = '';
  delete note.dataset.state;
}
