/* The graph page: fetch the notes and links (/ui/graph.json), lay them out with the vendored d3-force
   and draw them on one canvas (no DOM node per note: 5,000 draw as fast as 50). Scroll or the + and −
   buttons zoom, a drag pans, names appear as you zoom in (the most linked first, never overlapping),
   a click lights up a note and its neighbours and offers a link to open it; "Hide notes without links"
   takes effect at once (unticked, they are drawn faded). Loaded as a file: the CSP allows no inline
   script. The page's state is window.ctxGraph, which the browser tests read. */
(function () {
  "use strict";

  var PALETTE = ["#2f6fb0", "#2e8540", "#8a3ab9", "#b8860b", "#d6336c", "#0f7c80", "#6b6b6b", "#7a4e2d"];
  var HERE = "#c2571a";
  var FONT = "12px system-ui, sans-serif";
  var MOST_LABELS = 300;

  function graph(box, data) {
    var canvas = document.createElement("canvas");
    var ctx = canvas.getContext("2d");
    box.appendChild(canvas);
    var colours = {};
    data.sources.forEach(function (s, i) { colours[s] = PALETTE[i % PALETTE.length]; });
    var byId = new Map();
    var all = data.nodes.map(function (n) {
      var node = { id: n.id, title: n.title || n.source_id, source: n.source, path: n.source_id, here: !!n.here,
                   links: n.links, out: 0, in: 0, near: new Set() };
      byId.set(n.id, node);
      return node;
    });
    var links = data.edges.map(function (e) {
      var a = byId.get(e.from), b = byId.get(e.to);
      a.out += 1; b.in += 1; a.near.add(b); b.near.add(a);
      return { source: a, target: b };
    });
    all.forEach(function (n) { n.r = 3 + Math.min(12, Math.sqrt(n.links) * 1.6); });
    var ranked = all.slice().sort(function (a, b) { return (b.here - a.here) || (b.links - a.links); });
    var state = { t: { k: 1, x: 0, y: 0 }, width: 1, height: 1, dpr: 1, moved: false, selected: null,
                  hover: null, hideOrphans: false, ticks: 0, frames: 0, settled: false, labels: 0 };

    var big = all.length > 1500;  // past it: a coarser, shorter layout (5,000 notes: about 130 steps of 20-30 ms)
    var simulation = window.d3.forceSimulation(all)
      .force("link", window.d3.forceLink(links).distance(big ? 24 : all.length < 50 ? 60 : 40))
      .force("charge", window.d3.forceManyBody().strength(big ? -28 : -80).theta(big ? 1.1 : 0.9)
        .distanceMax(big ? 300 : 600))
      .force("x", window.d3.forceX(0).strength(0.05))
      .force("y", window.d3.forceY(0).strength(0.05))
      .stop();
    if (all.length > 300) { simulation.alphaDecay(big ? 0.05 : 0.04); }  // 135 or 170 steps instead of 300
    var budget = all.length > 300 ? 40 : 14;  // milliseconds of layout a frame

    function visible() { return state.hideOrphans ? all.filter(function (n) { return n.links > 0; }) : all; }

    function size() {
      state.dpr = window.devicePixelRatio || 1;
      state.width = box.clientWidth || 1;
      state.height = box.clientHeight || 1;
      canvas.width = Math.round(state.width * state.dpr);
      canvas.height = Math.round(state.height * state.dpr);
      canvas.style.width = state.width + "px";
      canvas.style.height = state.height + "px";
    }

    function fit() {
      var shown = visible();
      if (!shown.length) { return; }
      var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      shown.forEach(function (n) {
        x0 = Math.min(x0, n.x - n.r); y0 = Math.min(y0, n.y - n.r);
        x1 = Math.max(x1, n.x + n.r); y1 = Math.max(y1, n.y + n.r);
      });
      var k = Math.min(4, (state.width - 40) / Math.max(1, x1 - x0), (state.height - 40) / Math.max(1, y1 - y0));
      state.t = { k: k, x: state.width / 2 - k * (x0 + x1) / 2, y: state.height / 2 - k * (y0 + y1) / 2 };
    }

    function radius(n) {  // in layout units: a point grows as the square root of the zoom, at least 1.5 px
      return Math.max(1.5, n.r * Math.sqrt(state.t.k)) / state.t.k;
    }

    function lit(n) { return !state.selected || n === state.selected || state.selected.near.has(n); }

    function draw() {
      var t = state.t, shown = visible();
      ctx.setTransform(state.dpr, 0, 0, state.dpr, 0, 0);
      ctx.clearRect(0, 0, state.width, state.height);
      ctx.setTransform(state.dpr * t.k, 0, 0, state.dpr * t.k, state.dpr * t.x, state.dpr * t.y);
      ctx.lineWidth = 1 / t.k;
      ctx.strokeStyle = state.selected ? "rgba(120,120,120,0.12)" : "rgba(110,110,110,0.45)";
      ctx.beginPath();
      links.forEach(function (l) { ctx.moveTo(l.source.x, l.source.y); ctx.lineTo(l.target.x, l.target.y); });
      ctx.stroke();
      if (state.selected) {
        ctx.lineWidth = 2 / t.k;
        ctx.strokeStyle = HERE;
        ctx.beginPath();
        links.forEach(function (l) {
          if (l.source === state.selected || l.target === state.selected) {
            ctx.moveTo(l.source.x, l.source.y); ctx.lineTo(l.target.x, l.target.y);
          }
        });
        ctx.stroke();
      }
      var groups = new Map();
      shown.forEach(function (n) {  // one path a colour and shade: 5,000 fills cost more than 10
        var key = (n.here ? HERE : colours[n.source]) + (!lit(n) ? "|0.12" : n.links ? "|1" : "|0.35");
        if (!groups.has(key)) { groups.set(key, []); }
        groups.get(key).push(n);
      });
      groups.forEach(function (members, key) {
        var parts = key.split("|");
        ctx.fillStyle = parts[0];
        ctx.globalAlpha = Number(parts[1]);
        ctx.beginPath();
        members.forEach(function (n) {
          var r = radius(n);
          ctx.moveTo(n.x + r, n.y);
          ctx.arc(n.x, n.y, r, 0, 2 * Math.PI);
        });
        ctx.fill();
      });
      ctx.globalAlpha = 1;
      if (state.selected) {
        ctx.lineWidth = 3 / t.k;
        ctx.strokeStyle = "#1b1b1b";
        ctx.beginPath();
        ctx.arc(state.selected.x, state.selected.y, radius(state.selected) + 2 / t.k, 0, 2 * Math.PI);
        ctx.stroke();
      }
      labels(shown);
      state.frames += 1;
    }

    /* Names in screen pixels (12 px at any zoom), the important first: the selected note and its
       neighbours, the hovered one, then by links; one appears once the zoom makes room for it. */
    function labels(shown) {
      var t = state.t, placed = [], drawn = 0;
      var showing = state.hideOrphans ? new Set(shown) : null;
      var first = [];
      if (state.hover) { first.push(state.hover); }
      if (state.selected) { first.push(state.selected); state.selected.near.forEach(function (n) { first.push(n); }); }
      ctx.setTransform(state.dpr, 0, 0, state.dpr, 0, 0);
      ctx.font = FONT;
      ctx.textBaseline = "top";
      ctx.lineJoin = "round";
      function place(n, forced) {
        if (drawn >= MOST_LABELS || (showing && !showing.has(n))) { return; }
        if (!forced && (t.k * (1 + Math.log2(1 + n.links)) < 1.25 || !lit(n))) { return; }
        var x = n.x * t.k + t.x, y = (n.y + radius(n)) * t.k + t.y + 2;
        if (x < -100 || x > state.width + 100 || y < -20 || y > state.height + 20) { return; }
        var text = n.title.length > 40 ? n.title.slice(0, 39) + "…" : n.title;
        var w = ctx.measureText(text).width, box = [x - w / 2 - 2, y - 1, x + w / 2 + 2, y + 15];
        for (var i = 0; i < placed.length; i++) {
          var p = placed[i];
          if (box[0] < p[2] && box[2] > p[0] && box[1] < p[3] && box[3] > p[1]) { return; }
        }
        placed.push(box);
        ctx.lineWidth = 3;
        ctx.strokeStyle = "rgba(255,255,255,0.9)";
        ctx.strokeText(text, box[0] + 2, y);
        ctx.fillStyle = "#1b1b1b";
        ctx.fillText(text, box[0] + 2, y);
        drawn += 1;
      }
      first.forEach(function (n) { place(n, true); });
      for (var i = 0; i < ranked.length && drawn < MOST_LABELS; i++) {
        if (first.indexOf(ranked[i]) < 0) { place(ranked[i], ranked[i].here); }
      }
      state.labels = drawn;
    }

    var pending = false;
    function redraw() {
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () { pending = false; draw(); });
    }

    function step() {  // a few milliseconds of layout a frame, so the page stays responsive while it settles
      var began = performance.now();
      while (simulation.alpha() > simulation.alphaMin() && performance.now() - began < budget) {
        simulation.tick();
        state.ticks += 1;
      }
      if (!state.moved) { fit(); }
      draw();
      if (simulation.alpha() > simulation.alphaMin()) {
        window.requestAnimationFrame(step);
      } else {
        state.settled = true;
        box.setAttribute("data-settled", String(state.ticks));
      }
    }

    function zoom(factor, x, y) {
      var t = state.t, k = Math.max(0.02, Math.min(16, t.k * factor));
      state.t = { k: k, x: x - (x - t.x) * k / t.k, y: y - (y - t.y) * k / t.k };
      state.moved = true;
      box.setAttribute("data-zoom", k.toFixed(3));
      redraw();
    }

    function at(event) {
      var r = canvas.getBoundingClientRect();
      return [event.clientX - r.left, event.clientY - r.top];
    }

    function nodeAt(x, y) {
      var t = state.t, wx = (x - t.x) / t.k, wy = (y - t.y) / t.k, best = null, bestD = Infinity;
      visible().forEach(function (n) {
        var d = Math.hypot(n.x - wx, n.y - wy), reach = Math.max(radius(n), 6 / t.k);
        if (d <= reach && d < bestD) { best = n; bestD = d; }
      });
      return best;
    }

    var panel = document.getElementById("graph-selected");
    var intro = panel ? panel.innerHTML : "";
    function select(n) {
      state.selected = n;
      redraw();
      if (!panel) { return; }
      if (!n) { panel.innerHTML = intro; return; }
      panel.textContent = "";
      var name = document.createElement("strong");
      name.textContent = n.title;
      var where = document.createElement("span");
      where.className = "path";
      where.textContent = " " + n.source + " · " + n.path + " · links to " + n.out + ", linked from " + n.in + " ";
      var open = document.createElement("a");
      open.href = "/ui/doc?id=" + encodeURIComponent(n.id);
      open.textContent = "Open the note";
      open.id = "graph-open";
      var around = document.createElement("a");
      around.href = "/ui/graph?id=" + encodeURIComponent(n.id);
      around.textContent = "Its neighbourhood alone";
      panel.append(name, where, open, " · ", around);
    }

    var drag = null;
    canvas.addEventListener("pointerdown", function (event) {
      var p = at(event);
      drag = { x: p[0], y: p[1], tx: state.t.x, ty: state.t.y, moved: false };
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener("pointermove", function (event) {
      var p = at(event);
      if (drag) {
        if (Math.abs(p[0] - drag.x) + Math.abs(p[1] - drag.y) > 4) { drag.moved = true; }
        if (drag.moved) {
          state.t = { k: state.t.k, x: drag.tx + p[0] - drag.x, y: drag.ty + p[1] - drag.y };
          state.moved = true;
          redraw();
        }
        return;
      }
      var over = nodeAt(p[0], p[1]);
      if (over !== state.hover) {
        state.hover = over;
        canvas.style.cursor = over ? "pointer" : "grab";
        redraw();
      }
    });
    canvas.addEventListener("pointerup", function (event) {
      var p = at(event), was = drag;
      drag = null;
      if (was && !was.moved) { select(nodeAt(p[0], p[1])); }
    });
    canvas.addEventListener("dblclick", function (event) {
      var p = at(event), n = nodeAt(p[0], p[1]);
      if (n) { window.location.href = "/ui/doc?id=" + encodeURIComponent(n.id); }
    });
    canvas.addEventListener("wheel", function (event) {
      event.preventDefault();
      var p = at(event);
      zoom(Math.exp(-event.deltaY * (event.deltaMode ? 0.05 : 0.0015)), p[0], p[1]);
    }, { passive: false });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && state.selected) { select(null); }
    });

    var buttons = box.parentNode.querySelector(".graph-zoom");
    if (buttons) {
      buttons.hidden = false;
      buttons.addEventListener("click", function (event) {
        var which = event.target.getAttribute && event.target.getAttribute("data-zoom");
        if (which === "fit") { fit(); state.moved = true; box.setAttribute("data-zoom", state.t.k.toFixed(3)); redraw(); }
        else if (which) { zoom(which === "in" ? 1.5 : 1 / 1.5, state.width / 2, state.height / 2); }
      });
    }
    if (panel) { panel.hidden = false; }
    var orphans = document.getElementById("graph-orphans");
    if (orphans) {
      state.hideOrphans = orphans.checked;
      orphans.addEventListener("change", function () {
        state.hideOrphans = orphans.checked;
        if (state.selected && !state.selected.links && state.hideOrphans) { select(null); }
        box.setAttribute("data-drawn", String(visible().length));
        redraw();
      });
    }
    if (window.ResizeObserver) {
      new window.ResizeObserver(function () { size(); if (!state.moved) { fit(); } redraw(); }).observe(box);
    }

    size();
    box.setAttribute("data-drawn", String(visible().length));
    window.ctxGraph = {
      state: state,
      drawn: function () { return visible().length; },
      draw: draw,
      where: function (id) {  // a note's centre in the page's coordinates (for a click)
        var n = byId.get(id), r = canvas.getBoundingClientRect();
        return n ? { x: r.left + n.x * state.t.k + state.t.x, y: r.top + n.y * state.t.k + state.t.y } : null;
      },
      busiest: function () { return ranked.filter(function (n) { return !state.hideOrphans || n.links; })[0].id; },
      painted: function () {  // how many pixels of the canvas are not blank
        var pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data, count = 0;
        for (var i = 3; i < pixels.length; i += 4) { if (pixels[i]) { count += 1; } }
        return count;
      }
    };
    step();
  }

  function ready() {
    var box = document.getElementById("graph");
    if (!box || !window.d3 || !window.d3.forceSimulation) { return; }
    fetch(box.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (answer) { return answer.json(); })
      .then(function (data) { if (data.nodes) { graph(box, data); } });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
