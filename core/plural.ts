/** plural(1, "user") → "1 user"; plural(2, "user") → "2 users". Its own module so the status table can use it. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
