// The team queue's poll tells the server what this page shows (scheduler/jobs/live_rows.py): the region's frame
// hash and version, and each list's rows in order with their hashes, so the answer carries only the rows that
// changed (out-of-band swaps), or 204 when nothing did. A static file, since the CSP refuses inline scripts.
(function () {
  function have(region) {
    const lists = new Map();
    region.querySelectorAll("[data-v]").forEach(function (piece) {
      const parent = piece.parentElement;
      const list = parent && parent.tagName === "TBODY" ? parent.id : "";
      if (!lists.has(list)) lists.set(list, []);
      lists.get(list).push(piece.id + "." + piece.dataset.v);
    });
    const parts = [region.dataset.liveFrame || "", region.dataset.liveVersion || ""];
    lists.forEach(function (items, list) { parts.push(list + ":" + items.join(",")); });
    return parts.join(";");
  }
  document.addEventListener("htmx:configRequest", function (event) {
    const region = event.detail.elt;
    if (event.detail.verb !== "get" || !region.hasAttribute("data-live-frame")) return;
    event.detail.headers["X-Live-Have"] = have(region);
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    const region = event.detail.elt;
    const version = event.detail.xhr && event.detail.xhr.getResponseHeader("X-Live-Version");
    if (version && region.isConnected && region.hasAttribute("data-live-frame")) region.dataset.liveVersion = version;
  });
})();
