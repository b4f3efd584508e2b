import { Fragment, useId } from "react";
import { FLAGS, JACK, splitFlags, type FlagPart } from "./flags";

function starPoints(cx: number, cy: number, r: number): string {
  return Array.from({ length: 10 }, (_, k) => {
    const radius = k % 2 === 0 ? r : r * 0.4;
    const a = -Math.PI / 2 + (k * Math.PI) / 5;
    return `${(cx + radius * Math.cos(a)).toFixed(2)},${(cy + radius * Math.sin(a)).toFixed(2)}`;
  }).join(" ");
}

function stripes(colors: string[], weights: number[] | undefined, horizontal: boolean) {
  const w = weights ?? colors.map(() => 1);
  const total = w.reduce((a, b) => a + b, 0);
  let at = 0;
  return colors.map((fill, k) => {
    const from = at;
    at += (w[k]! / total) * (horizontal ? 20 : 30);
    // A hair of overlap: no background seam between stripes at fractional sizes.
    return horizontal ? <rect key={k} x={0} y={from} width={30} height={at - from + 0.05} fill={fill} /> : <rect key={k} x={from} y={0} width={at - from + 0.05} height={20} fill={fill} />;
  });
}

/** The Union Jack in a box: saltires (white, then red), then St George's cross on white. */
function Jack({ x, y, width, height, clip }: { x: number; y: number; width: number; height: number; clip: string }) {
  const sx = width / 30;
  const sy = height / 20;
  return (
    <g clipPath={`url(#${clip})`} transform={`translate(${x} ${y}) scale(${sx} ${sy})`}>
      <rect width={30} height={20} fill={JACK.NAVY} />
      <path d="M0,0 L30,20 M30,0 L0,20" stroke={JACK.WHITE} strokeWidth={4} />
      <path d="M0,0 L30,20 M30,0 L0,20" stroke={JACK.RED} strokeWidth={1.4} />
      <path d="M15,0 V20 M0,10 H30" stroke={JACK.WHITE} strokeWidth={6} />
      <path d="M15,0 V20 M0,10 H30" stroke={JACK.RED} strokeWidth={3.6} />
    </g>
  );
}

function Part({ part, clip }: { part: FlagPart; clip: string }) {
  if ("h" in part) return <>{stripes(part.h, part.w, true)}</>;
  if ("v" in part) return <>{stripes(part.v, part.w, false)}</>;
  if ("rect" in part) return <rect x={part.rect[0]} y={part.rect[1]} width={part.rect[2]} height={part.rect[3]} fill={part.fill} />;
  if ("circle" in part) return <circle cx={part.circle[0]} cy={part.circle[1]} r={part.circle[2]} fill={part.fill} />;
  if ("star" in part) return <polygon points={starPoints(...part.star)} fill={part.fill} />;
  if ("poly" in part) return <polygon points={part.poly} fill={part.fill} />;
  if ("path" in part) return <path d={part.path} fill={part.fill ?? "none"} stroke={part.stroke} strokeWidth={part.strokeWidth} />;
  if ("cross" in part) {
    const [x, y, w] = part.cross;
    return (
      <>
        <rect x={x - w / 2} y={0} width={w} height={20} fill={part.fill} />
        <rect x={0} y={y - w / 2} width={30} height={w} fill={part.fill} />
      </>
    );
  }
  if ("crescent" in part) {
    const [cx, cy, r, dx] = part.crescent;
    return (
      <>
        <circle cx={cx} cy={cy} r={r} fill={part.fill} />
        <circle cx={cx + dx} cy={cy} r={r * 0.8} fill={part.cut} />
      </>
    );
  }
  return <Jack x={part.jack[0]} y={part.jack[1]} width={part.jack[2]} height={part.jack[3]} clip={clip} />;
}

/**
 * A country's flag as SVG, the height of the text around it (3:2), so it never depends on a
 * colour-emoji font. Unknown codes get a neutral grey flag with the code on it.
 */
export function Flag({ code, className }: { code: string; className?: string }) {
  const clip = useId();
  const upper = code.toUpperCase();
  const parts = FLAGS[upper];
  return (
    <svg
      aria-hidden
      viewBox="0 0 30 20"
      className={`inline-block h-[0.9em] w-[1.35em] shrink-0 rounded-[2px] align-[-0.1em] shadow-[0_0_0_0.5px_rgba(15,23,42,0.35)] ${className ?? ""}`}
      data-flag={upper}
    >
      <clipPath id={clip}>
        <rect width={30} height={20} />
      </clipPath>
      {parts ? (
        parts.map((p, k) => <Part key={k} part={p} clip={clip} />)
      ) : (
        <>
          <rect width={30} height={20} fill="#e2e8f0" />
          <text x={15} y={14} textAnchor="middle" fontSize={10} fontWeight={600} fill="#475569" fontFamily="system-ui, sans-serif">
            {upper}
          </text>
        </>
      )}
    </svg>
  );
}

/**
 * Text with each flag emoji drawn as <Flag>. The emoji stays in the page as screen-reader
 * text, so names read, copy and match as they are stored.
 */
export function FlagText({ text }: { text: string }) {
  const runs = splitFlags(text);
  if (runs.length === 1 && !runs[0]!.code) return <>{text}</>;
  return (
    <>
      {runs.map((r, k) =>
        r.code ? (
          <span key={k} className="relative">
            <Flag code={r.code} />
            <span className="sr-only">{r.text}</span>
          </span>
        ) : (
          <Fragment key={k}>{r.text}</Fragment>
        ),
      )}
    </>
  );
}
