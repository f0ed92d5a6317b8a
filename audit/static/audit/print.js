// The report's "Print" button: shown only when scripts run, it opens the browser's print dialog
// (the print stylesheet hides navigation and keeps tables whole). A file, not inline: the CSP refuses those.
document.querySelectorAll("[data-print]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () { window.print(); });
});
