import { routeFlagPrefix } from "@/core/format";
import { FlagText } from "@/components/ui/Flag";

/**
 * A route's title inside its heading, in the diagram and in the narrow list alike: its
 * position, its flag (unless its name starts with one) and its name. A route in panic has
 * a red position.
 */
export function RouteTitle({ route, position, panic = false }: { route: { name: string; flag: string | null }; position: number; panic?: boolean }) {
  const flag = routeFlagPrefix(route.name, route.flag);
  return (
    <>
      <span aria-hidden className={`text-xs font-normal tabular-nums ${panic ? "text-red-700" : "text-slate-500"}`}>
        {position + 1}.
      </span>
      {flag && (
        <span aria-hidden>
          <FlagText text={flag} />
        </span>
      )}
      <span className="truncate">
        <FlagText text={route.name} />
      </span>
    </>
  );
}
