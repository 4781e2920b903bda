/* The agent builder's enhancements (loaded as a file: the CSP allows no inline script).
   - Argument rows: "Add an argument" copies the <template id="argument-template"> row with the next
     number; "Remove this argument" takes a row out. Both buttons are rendered hidden and shown here,
     so a browser without JavaScript fills the blank row instead (and clears a row to drop it).
   - Live preview: a change to the form (typed, ticked, a row added or removed) posts the form to
     /ui/agent-preview with action=preview, at most every 300 ms, and puts the answer (HTML rendered by
     the server, values escaped) in #preview; "Preview" and "Try it" do the same at once (action=try
     adds what agent_inject returns) instead of reloading the page. A late answer never replaces a
     newer one. Nothing here writes: saving stays the form's own POST. */
(function () {
  "use strict";

  var DELAY_MS = 300;

  function ready() {
    var form = document.getElementById("agent-form");
    var preview = document.getElementById("preview");
    if (!form || !preview) { return; }
    var rows = document.getElementById("argument-rows");
    var template = document.getElementById("argument-template");
    var add = document.getElementById("add-argument");
    var sent = 0;
    var shown = 0;
    var timer = null;

    function look(action) {
      var body = new FormData(form);
      body.set("action", action);
      var number = ++sent;
      preview.setAttribute("aria-busy", "true");
      fetch("/ui/agent-preview", {method: "POST", body: body, credentials: "same-origin"})
        .then(function (response) { return response.text().then(function (text) { return [response.ok, text]; }); })
        .then(function (answer) {
          if (number < shown) { return; }
          shown = number;
          if (answer[0]) {
            preview.innerHTML = answer[1];
          } else {
            preview.textContent = "The preview was refused: reload the page (your session or its token expired).";
          }
          preview.removeAttribute("aria-busy");
        }, function () {
          if (number >= shown) { preview.textContent = "The server did not answer the preview."; }
          preview.removeAttribute("aria-busy");
        });
    }

    function soon() {
      if (timer !== null) { clearTimeout(timer); }
      timer = setTimeout(function () { timer = null; look("preview"); }, DELAY_MS);
    }

    function showRemove(scope) {
      var buttons = scope.querySelectorAll("button.remove-argument");
      for (var i = 0; i < buttons.length; i++) { buttons[i].hidden = false; }
    }

    function nextNumber() {
      var highest = -1;
      var present = rows.querySelectorAll("fieldset.argument[data-row]");
      for (var i = 0; i < present.length; i++) {
        var n = parseInt(present[i].getAttribute("data-row"), 10);
        if (n > highest) { highest = n; }
      }
      return highest + 1;
    }

    if (rows && template && add) {
      add.hidden = false;
      showRemove(rows);
      add.addEventListener("click", function () {
        var n = String(nextNumber());
        var copy = template.content.cloneNode(true);
        var marked = copy.querySelectorAll("[id], [for], [name], [data-row]");
        for (var i = 0; i < marked.length; i++) {
          ["id", "for", "name", "data-row"].forEach(function (attribute) {
            var value = marked[i].getAttribute(attribute);
            if (value !== null) { marked[i].setAttribute(attribute, value.split("__N__").join(n)); }
          });
        }
        var legend = copy.querySelector("legend");
        if (legend) { legend.textContent = "Argument " + (parseInt(n, 10) + 1); }
        showRemove(copy);
        rows.appendChild(copy);
        var first = rows.querySelector("#arg-" + n + "-name");
        if (first) { first.focus(); }
        soon();
      });
      rows.addEventListener("click", function (event) {
        var button = event.target.closest ? event.target.closest("button.remove-argument") : null;
        if (!button) { return; }
        var row = button.closest("fieldset.argument");
        if (row) { row.parentNode.removeChild(row); }
        if (add) { add.focus(); }
        soon();
      });
    }

    form.addEventListener("input", soon);
    form.addEventListener("change", soon);
    form.addEventListener("click", function (event) {
      var button = event.target.closest ? event.target.closest("button[name=action]") : null;
      if (!button || (button.value !== "preview" && button.value !== "try")) { return; }
      event.preventDefault();
      if (timer !== null) { clearTimeout(timer); timer = null; }
      look(button.value);
    });
    look("preview");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
