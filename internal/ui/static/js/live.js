// The header's live-feed badge: the current view's feed says how it is.

const LABELS = { live: "live", connecting: "connecting…", reconnecting: "reconnecting…", error: "feed error", off: "offline" };

export function setLive(state, err) {
  const el = document.getElementById("live");
  if (!el) return;
  el.dataset.state = state;
  el.hidden = state === "off"; // a page without a feed shows no badge
  el.textContent = LABELS[state] || state;
  el.title = err ? String(err.message || err) : "Live feed";
}
