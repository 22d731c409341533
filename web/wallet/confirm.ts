// One confirmation dialog for every spend and withdrawal: what happens, the amounts, the balance after.

const dialog = () => document.getElementById('confirm') as HTMLDialogElement;

/** A row of the dialog: what, the text shown, and for an amount its minor units (the dd's data-units). */
export type Row = [string, string] | [string, string, string];

/**
 * Shows the dialog with its rows; resolves true on 확인, false on 취소 or Escape. `okOnly`: a notice
 * with one button (nothing to confirm).
 */
export function confirmAction(title: string, rows: Row[], ok = '확인', opts: { okOnly?: boolean } = {}): Promise<boolean> {
  const d = dialog();
  d.querySelector('h2')!.textContent = title;
  const dl = d.querySelector('dl')!;
  dl.replaceChildren(
    ...rows.flatMap(([k, v, units]) => {
      const dd = Object.assign(document.createElement('dd'), { textContent: v });
      if (units !== undefined) dd.dataset.units = units;
      return [Object.assign(document.createElement('dt'), { textContent: k }), dd];
    }),
  );
  (d.querySelector('#confirm-ok') as HTMLButtonElement).textContent = ok;
  (d.querySelector('#confirm-cancel') as HTMLButtonElement).hidden = Boolean(opts.okOnly);
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.returnValue = '';
    d.showModal();
    (d.querySelector(opts.okOnly ? '#confirm-ok' : '#confirm-cancel') as HTMLButtonElement).focus();
  });
}
