// One confirmation dialog for every spend and withdrawal: what happens, the amounts, the balance after.

const dialog = () => document.getElementById('confirm') as HTMLDialogElement;

/** Shows the dialog with its rows; resolves true on 확인, false on 취소 or Escape. */
export function confirmAction(title: string, rows: [string, string][], ok = '확인'): Promise<boolean> {
  const d = dialog();
  d.querySelector('h2')!.textContent = title;
  const dl = d.querySelector('dl')!;
  dl.replaceChildren(...rows.flatMap(([k, v]) => [Object.assign(document.createElement('dt'), { textContent: k }), Object.assign(document.createElement('dd'), { textContent: v })]));
  (d.querySelector('#confirm-ok') as HTMLButtonElement).textContent = ok;
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.returnValue = '';
    d.showModal();
    (d.querySelector('#confirm-cancel') as HTMLButtonElement).focus();
  });
}
