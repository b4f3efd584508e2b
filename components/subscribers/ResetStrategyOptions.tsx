/** The choices of a usage reset schedule (server/usage/limits.ts), for a subscriber or a plan's default. */
export function ResetStrategyOptions() {
  return (
    <>
      <option value="never">Never</option>
      <option value="daily">Daily</option>
      <option value="weekly">Weekly</option>
      <option value="monthly">Monthly</option>
    </>
  );
}
