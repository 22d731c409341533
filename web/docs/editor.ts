import { markdown } from '@codemirror/lang-markdown';
import { Compartment, EditorSelection, EditorState, type StateCommand } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { yCollab, yUndoManagerKeymap } from 'y-codemirror.next';
import type { Awareness } from 'y-protocols/awareness';
import * as Y from 'yjs';

/**
 * The markdown editor: CodeMirror 6 bound to the document's Y.Text by y-codemirror.next. Remote
 * edits arrive as CodeMirror changes, so every caret (yours and the remote ones drawn from
 * awareness) moves with the text; IME composition is CodeMirror's own; the Y.UndoManager tracks
 * only this editor's changes, so undo never takes back a co-editor's typing.
 */
// @codemirror/commands is not among the dependencies: the few keys the browser's own editing does
// not cover are bound here (cursor movement, deletion and Enter are CodeMirror's input handling).
const docStart: StateCommand = ({ state, dispatch }) => (dispatch(state.update({ selection: { anchor: 0 }, scrollIntoView: true, userEvent: 'select' })), true);
const docEnd: StateCommand = ({ state, dispatch }) => (dispatch(state.update({ selection: { anchor: state.doc.length }, scrollIntoView: true, userEvent: 'select' })), true);
const selectAll: StateCommand = ({ state, dispatch }) => (dispatch(state.update({ selection: EditorSelection.range(0, state.doc.length), userEvent: 'select' })), true);
const basicKeys = [
  { key: 'Mod-Home', run: docStart },
  { key: 'Mod-End', run: docEnd },
  { key: 'Mod-a', run: selectAll },
  // Tab is left to the browser: it moves the focus on, so the keyboard is never trapped in the editor
];

export interface BoundEditor {
  view: EditorView;
  undo: Y.UndoManager;
  setEditable(on: boolean): void;
  text(): string;
  destroy(): void;
}

export interface EditorHooks {
  /** The text changed (typed here or arrived from the room). */
  onChange(text: string): void;
  /** The selection changed: the selected text (empty when the selection is a caret). */
  onSelect(selected: string): void;
  /** Editable from the first frame: a read-only reader never holds an editable editor. */
  editable: boolean;
}

export function bindEditor(parent: HTMLElement, ytext: Y.Text, awareness: Awareness, hooks: EditorHooks): BoundEditor {
  const undo = new Y.UndoManager(ytext);
  const editable = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: ytext.toString(),
      extensions: [
        lineNumbers(),
        drawSelection(),
        highlightActiveLine(),
        EditorView.lineWrapping,
        markdown(),
        keymap.of([...yUndoManagerKeymap, ...basicKeys]),
        yCollab(ytext, awareness, { undoManager: undo }),
        editable.of([EditorView.editable.of(hooks.editable), EditorState.readOnly.of(!hooks.editable)]),
        EditorView.contentAttributes.of({ 'aria-label': '문서 본문 (Markdown)', spellcheck: 'false' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) hooks.onChange(u.state.doc.toString());
          if (u.docChanged || u.selectionSet) {
            const { from, to } = u.state.selection.main;
            hooks.onSelect(u.state.sliceDoc(from, to));
          }
        }),
      ],
    }),
  });
  return {
    view,
    undo,
    setEditable(on) {
      view.dispatch({ effects: editable.reconfigure([EditorView.editable.of(on), EditorState.readOnly.of(!on)]) });
    },
    text: () => view.state.doc.toString(),
    destroy() {
      view.destroy();
      undo.destroy();
    },
  };
}
