// How numbers, money and times are shown.

const intFmt = new Intl.NumberFormat("en-US");

export function int(n) {
  return intFmt.format(Number(n) || 0);
}

// Every amount of money on every page has this one precision: dollars with
// four decimals, enough for a single message's cost ($0.0004) and the same
// digits whether a page shows a message, a session or a month.
const costFmt = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 4, maximumFractionDigits: 4 });
const COST_STEP = 0.0001;

/** cost shows an amount of dollars with four decimals; a positive one below $0.0001 as "<$0.0001", never as $0. */
export function cost(n) {
  const v = Number(n) || 0;
  if (v > 0 && v < COST_STEP / 2) return "<" + costFmt.format(COST_STEP);
  return costFmt.format(v);
}

function pad(n) {
  return String(n).padStart(2, "0");
}

/** time shows an RFC 3339 instant in the browser's time zone, to the second. */
export function time(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** ago says how long ago an instant was, roughly. */
export function ago(iso) {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return "";
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** json pretty-prints a value; a string holding JSON is parsed first. */
export function json(v) {
  if (typeof v === "string") {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}

/** short cuts a string to n characters, with an ellipsis. */
export function short(str, n) {
  const t = String(str ?? "");
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

/** localDayStart turns an <input type=date> value into the RFC 3339 instant its day starts, locally. */
export function localDayStart(day) {
  return day ? new Date(day + "T00:00:00").toISOString() : "";
}

/** localDayEnd is the instant after that day, locally. */
export function localDayEnd(day) {
  if (!day) return "";
  const d = new Date(day + "T00:00:00");
  d.setDate(d.getDate() + 1);
  return d.toISOString();
}

/** utcDay is a Date's UTC day, YYYY-MM-DD. */
export function utcDay(d) {
  return d.toISOString().slice(0, 10);
}
