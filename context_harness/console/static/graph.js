/* The graph page: fetch the nodes and links (/ui/graph.json) and draw them with the vendored
   Cytoscape.js; a click on a note opens its page. Loaded as a file: the CSP allows no inline script. */
(function () {
  "use strict";

  function draw(box, data) {
    var elements = data.nodes.map(function (n) {
      return { data: { id: n.id, label: n.title || n.source_id, here: n.here ? 1 : 0 } };
    }).concat(data.edges.map(function (e, i) {
      return { data: { id: "e" + i, source: e.from, target: e.to } };
    }));
    var cy = window.cytoscape({
      container: box,
      elements: elements,
      style: [
        { selector: "node", style: { "label": "data(label)", "font-size": 11, "background-color": "#2f6fb0",
                                     "width": 14, "height": 14, "text-valign": "bottom", "text-margin-y": 3,
                                     "color": "#1b1b1b" } },
        { selector: "node[here = 1]", style: { "background-color": "#c2571a", "width": 22, "height": 22 } },
        { selector: "edge", style: { "width": 1.5, "line-color": "#999", "target-arrow-color": "#999",
                                     "target-arrow-shape": "triangle", "curve-style": "bezier" } }
      ],
      layout: { name: data.nodes.length > 1 ? "cose" : "grid", animate: false, randomize: false, padding: 40,
                nodeDimensionsIncludeLabels: true, idealEdgeLength: function () { return 120; },
                componentSpacing: 90, nodeRepulsion: function () { return 40000; } },
      maxZoom: 1.2,
      wheelSensitivity: 0.3
    });
    cy.on("tap", "node", function (event) {
      window.location.href = "/ui/doc?id=" + encodeURIComponent(event.target.id());
    });
    box.setAttribute("data-drawn", String(data.nodes.length));
  }

  function ready() {
    var box = document.getElementById("graph");
    if (!box || !window.cytoscape) { return; }
    fetch(box.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (answer) { return answer.json(); })
      .then(function (data) { if (data.nodes) { draw(box, data); } });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
