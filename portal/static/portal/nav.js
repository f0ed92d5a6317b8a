// The top menu folds behind the "Menu" button on narrow screens (portal.css, max-width 760px): the
// button opens and closes it, Escape closes it. A static file, since the CSP refuses inline scripts.
(function () {
  const button = document.querySelector(".menu-toggle");
  const bar = button && button.closest(".topbar");
  if (!bar) return;
  function set(open) {
    bar.classList.toggle("open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  button.addEventListener("click", function () { set(!bar.classList.contains("open")); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && bar.classList.contains("open")) { set(false); button.focus(); }
  });
})();
