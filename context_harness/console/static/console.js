/* The console's small enhancements (loaded as a file: the CSP allows no inline script).
   Copy buttons: <button class="copy" data-target="ID"> copies the text of element ID. They are
   rendered hidden and shown here, so a browser without JavaScript never sees a dead button. */
(function () {
  "use strict";

  function status(text) {
    var box = document.getElementById("copy-status");
    if (box) { box.textContent = text; }
  }

  function fallbackCopy(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var done = false;
    try { done = document.execCommand("copy"); } catch (e) { done = false; }
    return done;
  }

  function copy(button) {
    var id = button.getAttribute("data-target");
    var node = id ? document.getElementById(id) : null;
    if (!node) { return; }
    var text = node.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { status("Copied " + id + "."); },
        function () { status(fallbackCopy(node) ? "Copied " + id + "." : "Select the text and copy it."); });
    } else {
      status(fallbackCopy(node) ? "Copied " + id + "." : "Select the text and copy it.");
    }
  }

  function ready() {
    var buttons = document.querySelectorAll("button.copy[data-target]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener("click", function (event) { copy(event.currentTarget); });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
