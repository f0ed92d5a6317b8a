// The team queue's waiting list is one line a job (compact); the toggle shows every row's details at once
// (comfortable) and is remembered in this browser. The live refresh replaces the table, so the choice is
// applied again after each swap. A static file, since the CSP refuses inline scripts.
(function () {
  const KEY = "portal.queue.density";
  function apply() {
    const comfortable = localStorage.getItem(KEY) === "comfortable";
    document.querySelectorAll("table.queue.waiting").forEach(function (table) {
      table.classList.toggle("compact", !comfortable);
      table.classList.toggle("comfortable", comfortable);
      if (comfortable) table.querySelectorAll("details.why-line").forEach(function (d) { d.open = true; });
    });
    document.querySelectorAll("[data-density-toggle]").forEach(function (button) {
      button.hidden = false;
      button.setAttribute("aria-pressed", comfortable ? "true" : "false");
    });
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-density-toggle]");
    if (!button) return;
    const comfortable = localStorage.getItem(KEY) === "comfortable";
    localStorage.setItem(KEY, comfortable ? "compact" : "comfortable");
    apply();
  });
  document.addEventListener("htmx:afterSettle", apply);
  apply();
})();
