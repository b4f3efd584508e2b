/**
 * The small text buttons of lists and cards. Colour and shape are separate so a tone never
 * competes with another colour class in one list (Tailwind orders utilities by its own rules,
 * not by their order in the class name).
 */
const smallButtonShape = "rounded px-1.5 py-1 text-xs font-medium disabled:opacity-50";
export const smallButton = `${smallButtonShape} text-slate-600 hover:bg-slate-100 hover:text-slate-900`;
/** A small button that removes something. */
export const smallDangerButton = `${smallButtonShape} text-red-700 hover:bg-red-50 hover:text-red-800`;
