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
