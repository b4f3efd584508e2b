import { deliveryText, eventLabel, when, type Delivery } from "./alert-view";

/** The last few deliveries to one target; on a phone each row is a card (table-cards). */
export function DeliveryHistory({ targetName, recent }: { targetName: string; recent: Delivery[] }) {
  return (
    <table className="table-cards mt-3 w-full text-left text-xs">
      <caption className="sr-only">Recent deliveries to {targetName}</caption>
      <thead className="text-slate-400">
        <tr>
          <th className="py-1 font-medium">Event</th>
          <th className="py-1 font-medium">Occurred</th>
          <th className="py-1 font-medium">Delivery</th>
          <th className="py-1 font-medium">Attempts</th>
        </tr>
      </thead>
      <tbody>
        {recent.map((d) => (
          <tr key={d.id} className="border-t border-slate-100 text-slate-600">
            <td className="py-1">{eventLabel(d.type)}</td>
            <td data-label="Occurred" className="py-1">{when(d.occurredAt)}</td>
            <td data-label="Delivery" className="py-1">{deliveryText(d)}</td>
            <td data-label="Attempts" className="py-1">{d.attempts}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
