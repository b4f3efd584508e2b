"use client";
import { useState } from "react";
import { secondaryButtonClass } from "./Field";

/** Copies text to the clipboard and says so for a moment. */
export function CopyButton({ text, label = "Copy", className }: { text: string; label?: string; className?: string }) {
  const [done, setDone] = useState<"ok" | "failed" | null>(null);
  return (
    <button
      type="button"
      className={className ?? secondaryButtonClass}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone("ok");
        } catch {
          setDone("failed");
        }
        setTimeout(() => setDone(null), 1500);
      }}
    >
      {done === "ok" ? "Copied" : done === "failed" ? "Select and copy" : label}
    </button>
  );
}

const CODE_TONES = {
  light: "break-all bg-slate-100 text-slate-900",
  dark: "fixed-palette break-all bg-slate-900 text-slate-100",
  block: "fixed-palette max-h-48 overflow-auto bg-slate-900 text-slate-100",
} as const;

/** A value shown as code with its copy button beside it (tokens, commands, links, files). */
export function CopyableCode({ text, testId, label, tone = "light" }: { text: string; testId: string; label?: string; tone?: keyof typeof CODE_TONES }) {
  const className = `flex-1 rounded-md px-3 py-2 font-mono text-xs ${CODE_TONES[tone]}`;
  return (
    <div className={`flex ${tone === "light" ? "items-center" : "items-start"} gap-2`}>
      {tone === "block" ? (
        <pre data-testid={testId} className={className}>
          {text}
        </pre>
      ) : (
        <code data-testid={testId} className={className}>
          {text}
        </code>
      )}
      <CopyButton text={text} label={label} />
    </div>
  );
}
