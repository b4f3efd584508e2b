/**
 * Flags drawn from a few shapes, on a 30×20 canvas: Linux desktops without a colour-emoji font
 * show a flag emoji as two letters in boxes. Simplified on purpose (at 16 px a coat of arms
 * is a blur): stripes, crosses, discs, stars and crescents in the right colours. Countries
 * not listed get a neutral flag with their code (a flag-icon package would cover all 250).
 */

export type FlagPart =
  /** Equal (or weighted) horizontal stripes over the whole flag. */
  | { h: string[]; w?: number[] }
  /** Equal (or weighted) vertical stripes. */
  | { v: string[]; w?: number[] }
  | { rect: [x: number, y: number, width: number, height: number]; fill: string }
  | { circle: [cx: number, cy: number, r: number]; fill: string }
  /** A five-pointed star. */
  | { star: [cx: number, cy: number, r: number]; fill: string }
  | { poly: string; fill: string }
  /** SVG path data, filled and/or stroked. */
  | { path: string; fill?: string; stroke?: string; strokeWidth?: number }
  /** A Nordic or Greek cross: bars of `width` through (x, y). */
  | { cross: [x: number, y: number, width: number]; fill: string }
  /** A crescent: a disc with a disc of the background cut out, `dx` to the right. */
  | { crescent: [cx: number, cy: number, r: number, dx: number]; fill: string; cut: string }
  /** The Union Jack in the box (its canton on Australia's and New Zealand's). */
  | { jack: [x: number, y: number, width: number, height: number] };

const RED = "#d52b1e";
const WHITE = "#ffffff";
const BLUE = "#0039a6";
const NAVY = "#012169";
const BLACK = "#000000";

const nordic = (bg: string, cross: string, inner?: string): FlagPart[] => [
  { rect: [0, 0, 30, 20], fill: bg },
  { cross: [11, 10, 5], fill: cross },
  ...(inner ? [{ cross: [11, 10, 2.5] as [number, number, number], fill: inner }] : []),
];

export const FLAGS: Readonly<Record<string, readonly FlagPart[]>> = {
  AE: [{ h: ["#00732f", WHITE, BLACK] }, { rect: [0, 0, 8, 20], fill: "#ff0000" }],
  AM: [{ h: ["#d90012", "#0033a0", "#f2a800"] }],
  AR: [{ h: ["#74acdf", WHITE, "#74acdf"] }, { circle: [15, 10, 2.6], fill: "#f6b40e" }],
  AT: [{ h: ["#ed2939", WHITE, "#ed2939"] }],
  AU: [{ rect: [0, 0, 30, 20], fill: NAVY }, { jack: [0, 0, 15, 10] }, { star: [7.5, 15, 2.4], fill: WHITE }, { star: [23, 5, 1.3], fill: WHITE }, { star: [20, 10, 1.3], fill: WHITE }, { star: [26, 9, 1.3], fill: WHITE }, { star: [23, 16, 1.3], fill: WHITE }],
  AZ: [{ h: ["#00b5e2", "#ef3340", "#509e2f"] }, { crescent: [14, 10, 3, 1], fill: WHITE, cut: "#ef3340" }, { star: [17.5, 10, 1.2], fill: WHITE }],
  BA: [{ rect: [0, 0, 30, 20], fill: "#002395" }, { poly: "8,0 22,0 22,20", fill: "#fecb00" }],
  BD: [{ rect: [0, 0, 30, 20], fill: "#006a4e" }, { circle: [13.5, 10, 6], fill: "#f42a41" }],
  BE: [{ v: [BLACK, "#fdda24", "#ef3340"] }],
  BG: [{ h: [WHITE, "#00966e", "#d62612"] }],
  BR: [{ rect: [0, 0, 30, 20], fill: "#009c3b" }, { poly: "15,2 28,10 15,18 2,10", fill: "#ffdf00" }, { circle: [15, 10, 4.2], fill: "#002776" }],
  BY: [{ h: ["#c8313e", "#4aa657"], w: [2, 1] }, { rect: [0, 0, 3, 20], fill: WHITE }, { rect: [1, 0, 1, 20], fill: "#c8313e" }],
  CA: [{ v: ["#d80621", WHITE, "#d80621"], w: [1, 2, 1] }, { poly: "15,4 16.5,7.5 19,7 17.5,11 19,12 15,15 11,12 12.5,11 11,7 13.5,7.5", fill: "#d80621" }],
  CH: [{ rect: [0, 0, 30, 20], fill: "#da291c" }, { rect: [13, 4, 4, 12], fill: WHITE }, { rect: [9, 8, 12, 4], fill: WHITE }],
  CL: [{ h: [WHITE, "#d52b1e"] }, { rect: [0, 0, 10, 10], fill: "#0039a6" }, { star: [5, 5, 2.5], fill: WHITE }],
  CN: [{ rect: [0, 0, 30, 20], fill: "#ee1c25" }, { star: [5, 5, 3], fill: "#ffff00" }, { star: [10, 2, 1], fill: "#ffff00" }, { star: [12, 4, 1], fill: "#ffff00" }, { star: [12, 7, 1], fill: "#ffff00" }, { star: [10, 9, 1], fill: "#ffff00" }],
  CO: [{ h: ["#fcd116", "#003893", "#ce1126"], w: [2, 1, 1] }],
  CY: [{ rect: [0, 0, 30, 20], fill: WHITE }, { poly: "9,8 14,6 21,6 19,10 12,11", fill: "#d57800" }, { poly: "11,14 15,15.5 19,14", fill: "#4e5b31" }],
  CZ: [{ h: [WHITE, "#d7141a"] }, { poly: "0,0 15,10 0,20", fill: "#11457e" }],
  DE: [{ h: [BLACK, "#dd0000", "#ffce00"] }],
  DK: nordic("#c8102e", WHITE),
  EE: [{ h: ["#0072ce", BLACK, WHITE] }],
  EG: [{ h: ["#ce1126", WHITE, BLACK] }, { circle: [15, 10, 1.8], fill: "#c09300" }],
  ES: [{ h: ["#aa151b", "#f1bf00", "#aa151b"], w: [1, 2, 1] }],
  FI: nordic(WHITE, "#002f6c"),
  FR: [{ v: ["#0055a4", WHITE, "#ef4135"] }],
  GB: [{ jack: [0, 0, 30, 20] }],
  GE: [{ rect: [0, 0, 30, 20], fill: WHITE }, { rect: [13, 0, 4, 20], fill: "#ff0000" }, { rect: [0, 8, 30, 4], fill: "#ff0000" }, { rect: [5.5, 3, 1, 3], fill: "#ff0000" }, { rect: [4.5, 4, 3, 1], fill: "#ff0000" }, { rect: [23.5, 3, 1, 3], fill: "#ff0000" }, { rect: [22.5, 4, 3, 1], fill: "#ff0000" }, { rect: [5.5, 14, 1, 3], fill: "#ff0000" }, { rect: [4.5, 15, 3, 1], fill: "#ff0000" }, { rect: [23.5, 14, 1, 3], fill: "#ff0000" }, { rect: [22.5, 15, 3, 1], fill: "#ff0000" }],
  GR: [{ h: ["#0d5eaf", WHITE, "#0d5eaf", WHITE, "#0d5eaf", WHITE, "#0d5eaf", WHITE, "#0d5eaf"] }, { rect: [0, 0, 11.1, 11.1], fill: "#0d5eaf" }, { rect: [4.45, 0, 2.2, 11.1], fill: WHITE }, { rect: [0, 4.45, 11.1, 2.2], fill: WHITE }],
  HK: [{ rect: [0, 0, 30, 20], fill: "#de2910" }, { star: [15, 10, 5], fill: WHITE }, { circle: [15, 10, 1], fill: "#de2910" }],
  HR: [{ h: ["#ff0000", WHITE, "#171796"] }, { rect: [12.5, 5.5, 5, 6], fill: "#ff0000" }, { rect: [13.75, 5.5, 1.25, 1.5], fill: WHITE }, { rect: [15, 7, 1.25, 1.5], fill: WHITE }, { rect: [13.75, 8.5, 1.25, 1.5], fill: WHITE }, { rect: [16.25, 5.5, 1.25, 1.5], fill: WHITE }, { rect: [16.25, 8.5, 1.25, 1.5], fill: WHITE }, { rect: [12.5, 7, 1.25, 1.5], fill: WHITE }, { rect: [15, 10, 1.25, 1.5], fill: WHITE }],
  HU: [{ h: ["#cd2a3e", WHITE, "#436f4d"] }],
  ID: [{ h: ["#ce1126", WHITE] }],
  IE: [{ v: ["#169b62", WHITE, "#ff883e"] }],
  IL: [{ rect: [0, 0, 30, 20], fill: WHITE }, { rect: [0, 2, 30, 3], fill: "#0038b8" }, { rect: [0, 15, 30, 3], fill: "#0038b8" }, { path: "M15,6.3 L18.3,12 L11.7,12 Z M15,13.7 L11.7,8 L18.3,8 Z", stroke: "#0038b8", strokeWidth: 0.8 }],
  IN: [{ h: ["#ff9933", WHITE, "#138808"] }, { circle: [15, 10, 2.6], fill: "#000080" }, { circle: [15, 10, 2], fill: WHITE }, { circle: [15, 10, 0.7], fill: "#000080" }],
  IR: [{ h: ["#239f40", WHITE, "#da0000"] }, { circle: [15, 10, 2], fill: "#da0000" }],
  IS: nordic("#02529c", WHITE, "#dc1e35"),
  IT: [{ v: ["#009246", WHITE, "#ce2b37"] }],
  JP: [{ rect: [0, 0, 30, 20], fill: WHITE }, { circle: [15, 10, 6], fill: "#bc002d" }],
  KR: [{ rect: [0, 0, 30, 20], fill: WHITE }, { circle: [15, 10, 5], fill: "#003478" }, { path: "M10,10 A5,5 0 0 1 20,10 Z", fill: "#cd2e3a" }, { rect: [3, 3, 4, 1], fill: BLACK }, { rect: [23, 3, 4, 1], fill: BLACK }, { rect: [3, 16, 4, 1], fill: BLACK }, { rect: [23, 16, 4, 1], fill: BLACK }],
  KZ: [{ rect: [0, 0, 30, 20], fill: "#00afca" }, { circle: [15, 9, 3.5], fill: "#fec50c" }, { rect: [2, 2, 1.5, 16], fill: "#fec50c" }],
  LT: [{ h: ["#fdb913", "#006a44", "#c1272d"] }],
  LU: [{ h: ["#ed2939", WHITE, "#00a1de"] }],
  LV: [{ h: ["#9e3039", WHITE, "#9e3039"], w: [2, 1, 2] }],
  MD: [{ v: ["#0046ae", "#ffd200", "#cc092f"] }, { circle: [15, 10, 2.2], fill: "#b07e55" }],
  MK: [{ rect: [0, 0, 30, 20], fill: "#d20000" }, { poly: "0,0 4,0 15,10 0,4", fill: "#ffe600" }, { poly: "30,0 26,0 15,10 30,4", fill: "#ffe600" }, { poly: "0,20 4,20 15,10 0,16", fill: "#ffe600" }, { poly: "30,20 26,20 15,10 30,16", fill: "#ffe600" }, { poly: "13.5,0 16.5,0 15,10", fill: "#ffe600" }, { poly: "13.5,20 16.5,20 15,10", fill: "#ffe600" }, { circle: [15, 10, 3.5], fill: "#ffe600" }],
  MX: [{ v: ["#006847", WHITE, "#ce1126"] }, { circle: [15, 10, 2.5], fill: "#8c5a2b" }],
  MY: [{ h: ["#cc0001", WHITE, "#cc0001", WHITE, "#cc0001", WHITE, "#cc0001", WHITE, "#cc0001", WHITE, "#cc0001", WHITE, "#cc0001", WHITE] }, { rect: [0, 0, 15, 11.4], fill: "#010066" }, { crescent: [6, 5.7, 4, 1.4], fill: "#ffcc00", cut: "#010066" }, { star: [11.2, 5.7, 2.4], fill: "#ffcc00" }],
  NG: [{ v: ["#008751", WHITE, "#008751"] }],
  NL: [{ h: ["#ae1c28", WHITE, "#21468b"] }],
  NO: nordic("#ba0c2f", WHITE, "#00205b"),
  NZ: [{ rect: [0, 0, 30, 20], fill: NAVY }, { jack: [0, 0, 15, 10] }, { star: [23, 5, 1.5], fill: "#c8102e" }, { star: [20, 10, 1.5], fill: "#c8102e" }, { star: [26, 9, 1.3], fill: "#c8102e" }, { star: [23, 16, 1.6], fill: "#c8102e" }],
  PH: [{ h: ["#0038a8", "#ce1126"] }, { poly: "0,0 17,10 0,20", fill: WHITE }, { circle: [5.5, 10, 2.2], fill: "#fcd116" }],
  PK: [{ rect: [0, 0, 30, 20], fill: "#01411c" }, { rect: [0, 0, 7.5, 20], fill: WHITE }, { crescent: [18.5, 10, 5, 1.8], fill: WHITE, cut: "#01411c" }, { star: [21.5, 7.5, 1.6], fill: WHITE }],
  PL: [{ h: [WHITE, "#dc143c"] }],
  PT: [{ v: ["#006600", "#ff0000"], w: [2, 3] }, { circle: [12, 10, 3.5], fill: "#ffcc00" }, { circle: [12, 10, 2.2], fill: "#ff0000" }],
  QA: [{ rect: [0, 0, 30, 20], fill: "#8a1538" }, { poly: "0,0 9,0 11,1.1 9,2.2 11,3.3 9,4.4 11,5.5 9,6.6 11,7.7 9,8.8 11,10 9,11.1 11,12.2 9,13.3 11,14.4 9,15.5 11,16.6 9,17.7 11,18.8 9,20 0,20", fill: WHITE }],
  RO: [{ v: ["#002b7f", "#fcd116", "#ce1126"] }],
  RS: [{ h: ["#c6363c", "#0c4076", WHITE] }, { rect: [7, 5, 4, 6], fill: "#c6363c" }],
  RU: [{ h: [WHITE, BLUE, RED] }],
  SA: [{ rect: [0, 0, 30, 20], fill: "#006c35" }, { rect: [8, 7, 14, 2], fill: WHITE }, { rect: [8, 13, 14, 1], fill: WHITE }],
  SE: nordic("#006aa7", "#fecc02"),
  SG: [{ h: ["#ef3340", WHITE] }, { crescent: [6, 5, 3.5, 1.5], fill: WHITE, cut: "#ef3340" }, { star: [9.5, 3.3, 0.8], fill: WHITE }, { star: [11.5, 4.8, 0.8], fill: WHITE }, { star: [10.8, 7, 0.8], fill: WHITE }, { star: [8.2, 7, 0.8], fill: WHITE }, { star: [7.5, 4.8, 0.8], fill: WHITE }],
  SI: [{ h: [WHITE, "#005da4", "#ed1c24"] }, { poly: "6,3 11,3 11,8 8.5,10 6,8", fill: "#005da4" }],
  SK: [{ h: [WHITE, "#0b4ea2", "#ee1c25"] }, { poly: "6,4 13,4 13,12 9.5,15 6,12", fill: "#ee1c25" }, { rect: [9, 6, 1, 6], fill: WHITE }, { rect: [7.5, 7.5, 4, 1], fill: WHITE }],
  TH: [{ h: ["#a51931", WHITE, "#2d2a4a", WHITE, "#a51931"], w: [1, 1, 2, 1, 1] }],
  TR: [{ rect: [0, 0, 30, 20], fill: "#e30a17" }, { crescent: [11, 10, 5, 1.3], fill: WHITE, cut: "#e30a17" }, { star: [17.3, 10, 2.2], fill: WHITE }],
  TW: [{ rect: [0, 0, 30, 20], fill: "#fe0000" }, { rect: [0, 0, 15, 10], fill: "#000095" }, { star: [7.5, 5, 3.4], fill: WHITE }, { circle: [7.5, 5, 1.9], fill: "#000095" }, { circle: [7.5, 5, 1.5], fill: WHITE }],
  UA: [{ h: ["#0057b7", "#ffd700"] }],
  US: [
    { h: ["#b22234", WHITE, "#b22234", WHITE, "#b22234", WHITE, "#b22234", WHITE, "#b22234", WHITE, "#b22234", WHITE, "#b22234"] },
    { rect: [0, 0, 12, 10.77], fill: "#3c3b6e" },
    ...[1.5, 4, 6.5, 9].flatMap((y, row) => (row % 2 === 0 ? [2, 5, 8, 11] : [3.5, 6.5, 9.5]).map((x) => ({ circle: [x - 0.5, y + 0.2, 0.55] as [number, number, number], fill: WHITE }))),
  ],
  UZ: [{ h: ["#0099b5", WHITE, "#1eb53a"] }, { rect: [0, 6.4, 30, 0.6], fill: "#ce1126" }, { rect: [0, 13, 30, 0.6], fill: "#ce1126" }, { crescent: [5, 3.2, 2.2, 0.9], fill: WHITE, cut: "#0099b5" }],
  VN: [{ rect: [0, 0, 30, 20], fill: "#da251d" }, { star: [15, 10, 6], fill: "#ffff00" }],
  ZA: [
    { h: ["#e03c31", WHITE, "#007749", WHITE, "#001489"], w: [6, 1, 6, 1, 6] },
    { poly: "0,0 4,0 15,7 30,7 30,13 15,13 4,20 0,20", fill: WHITE },
    { poly: "0,1.5 2,1.5 14,8.5 30,8.5 30,11.5 14,11.5 2,18.5 0,18.5", fill: "#007749" },
    { poly: "0,3.5 10,10 0,16.5", fill: "#ffb612" },
    { poly: "0,5 8,10 0,15", fill: BLACK },
  ],
};

/** The Union Jack's colours. */
export const JACK = { NAVY, WHITE, RED: "#c8102e" };

/** Whether a flag is drawn for the code (others get the neutral flag). */
export function hasFlag(code: string): boolean {
  return Object.hasOwn(FLAGS, code.toUpperCase());
}

/** Two regional indicator symbols (a flag emoji) → its ISO code; anything else → null. */
export function codeOfFlagEmoji(pair: string): string | null {
  const points = [...pair].map((c) => c.codePointAt(0)!);
  if (points.length !== 2 || points.some((p) => p < 0x1f1e6 || p > 0x1f1ff)) return null;
  return String.fromCharCode(...points.map((p) => p - 0x1f1e6 + 65));
}

/** Splits text into plain runs and flag emoji (each with its ISO code), in order. */
export function splitFlags(text: string): Array<{ text: string; code?: string }> {
  const out: Array<{ text: string; code?: string }> = [];
  const re = /[\u{1F1E6}-\u{1F1FF}]{2}/gu;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push({ text: text.slice(last, m.index) });
    out.push({ text: m[0], code: codeOfFlagEmoji(m[0])! });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  return out;
}
