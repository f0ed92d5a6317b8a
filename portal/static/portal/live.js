// Live regions (the queues, the job page) are replaced by HTMX every few seconds. A replaced region
// would fold every <details> the reader opened; remember the open ones by their data-keep key before
// the swap and open them again after it, so reading a long blocker list survives a refresh.
(function () {
  const opened = new Map(); // region id -> keys of open <details>
  document.addEventListener("htmx:beforeSwap", function (event) {
    const region = event.detail.target;
    if (!region.id) return;
    opened.set(region.id, Array.from(region.querySelectorAll("details[open][data-keep]"),
                                     (d) => d.dataset.keep));
  });
  document.addEventListener("htmx:afterSettle", function () {
    opened.forEach(function (keys, id) {
      const region = document.getElementById(id);
      if (!region) return;
      keys.forEach(function (key) {
        const details = region.querySelector('details[data-keep="' + CSS.escape(key) + '"]');
        if (details) details.open = true;
      });
    });
    opened.clear();
  });
})();
