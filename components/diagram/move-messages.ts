/** The words of a move's toast and of its Undo's answer. Pure, so they are unit-tested. */

/** "Saved: de-fra-1 moved from Germany to Unassigned." — the server's answer to a drop. */
export function moveToastText(name: string, from: string, to: string): string {
  return `Saved: ${name} moved from ${from} to ${to}.`;
}

/** The toast after Undo: back where it was, or why not (`error` = the server's refusal). */
export function undoToastText(name: string, from: string, error: string | null): string {
  return error === null ? `Undone: ${name} is back in ${from}.` : `Could not undo the move of ${name}: ${error}`;
}
