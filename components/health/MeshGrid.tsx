"use client";

interface MeshCell {
  observerId: string;
  targetId: string;
  lastOk: boolean;
  failStreak: number;
  rttMs: number | null;
}

/** Neighbour checks as an observer × target grid. */
export function MeshGrid({
  servers,
  mesh,
}: {
  servers: ReadonlyArray<{ id: string; name: string; unreliableWitness: boolean; meshReason: string | null }>;
  mesh: ReadonlyArray<MeshCell>;
}) {
  const cell = new Map(mesh.map((m) => [`${m.observerId}>${m.targetId}`, m]));
  return (
    <section aria-labelledby="mesh-title">
      <h2 id="mesh-title" className="mb-1 text-lg font-semibold">
        Mesh: who can reach whom
      </h2>
      <p className="mb-3 text-xs text-slate-500">
        Rows are observers, columns are targets. A target is unreachable only when at least 2 observers (and at least half of
        them) failed ≥ 3 checks in a row; an observer failing more than half of its neighbours is ignored.
      </p>
      {mesh.length === 0 ? (
        <p className="text-sm text-slate-500">No neighbour checks reported yet.</p>
      ) : (
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="text-xs" aria-label="Mesh checks">
            <thead>
              <tr>
                <th className="px-2 py-1 text-left text-slate-500">observer ↓ / target →</th>
                {servers.map((t) => (
                  <th key={t.id} scope="col" className="px-2 py-1 font-medium" title={t.meshReason ?? undefined}>
                    {t.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {servers.map((o) => (
                <tr key={o.id} className="border-t border-slate-100">
                  <th scope="row" className="px-2 py-1 text-left font-medium">
                    {o.name}
                    {o.unreliableWitness && <span className="ml-1 rounded bg-amber-100 px-1 text-amber-800">unreliable witness</span>}
                  </th>
                  {servers.map((t) => {
                    if (t.id === o.id) return <td key={t.id} className="bg-slate-50 px-2 py-1 text-center text-slate-300">—</td>;
                    const c = cell.get(`${o.id}>${t.id}`);
                    if (!c) return <td key={t.id} className="px-2 py-1 text-center text-slate-400">·</td>;
                    return (
                      <td
                        key={t.id}
                        data-testid={`mesh-${o.name}-${t.name}`}
                        className={`px-2 py-1 text-center ${c.lastOk ? "text-green-700" : "bg-red-50 text-red-700"}`}
                        title={c.lastOk ? `ok${c.rttMs !== null ? `, ${c.rttMs} ms` : ""}` : `failed ${c.failStreak} time(s) in a row`}
                      >
                        {c.lastOk ? `✓ ${c.rttMs !== null ? `${Math.round(c.rttMs)} ms` : ""}` : `✗ ×${c.failStreak}`}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
