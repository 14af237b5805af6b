// The report page's only script (the page's CSP allows it by its hash). It never builds HTML from the data:
// index rows are filled with textContent, and the paged viewer inserts only the sections our own templates
// rendered (report_data/v/<k>.js), through the one Trusted Types policy, which also accepts no script URL but
// report_data's own files. Without JavaScript the single-file page shows everything (the form stays hidden).
//
// Both layouts: search (id and the start of the query), filters (score, category, tag, release, outcome,
// human review when the run has decisions, route), sorting (score, majority issues, judge cost, id), presets from the address (report.html?score=2&
// sort=-cost&q=refund) and #/t/<id> links to one trajectory (#/t/<id>/T4: its turn 4).
// - single file: the rows of the index table are the data; a filter hides rows and sections, a sort reorders rows.
// - paged: report_data/index.js holds the rows; the index is a virtual list (only the rows in view exist in
//   the page), and the viewer loads the shard of the trajectory asked for, one at a time.
(function () {
  "use strict";
  var section = document.getElementById("trajectories");
  var form = document.getElementById("filters");
  var count = document.getElementById("filter-count");

  // Closed <details> do not print; open them for the printout and restore them afterwards.
  var reopened = [];
  window.addEventListener("beforeprint", function () {
    reopened = Array.prototype.filter.call(document.querySelectorAll("details:not([open])"), function (d) {
      d.open = true; return true;
    });
  });
  window.addEventListener("afterprint", function () { reopened.forEach(function (d) { d.open = false; }); reopened = []; });
  if (!section || !form) { return; }

  // A row of the index, in both layouts (the column order of report_data/index.js).
  var ID = 0, SCORE = 1, RELEASE = 2, TURNS = 3, MAJORITY = 4, SEVERE = 5, MINORITY = 6, COST = 7, OUTCOME = 8,
    ROUTE = 9, CATEGORIES = 10, TAGS = 11, TEXT = 12, VIEWABLE = 13, REVIEW = 14;
  var PRESETS = ["q", "score", "category", "tag", "release", "outcome", "review", "route", "sort"];
  // The review filter: a row's REVIEW is null (no human decision) or {by, score, release, over, stale}.
  var REVIEWED = {
    yes: function (v) { return v !== null; },
    no: function (v) { return v === null; },
    "over-gate": function (v) { return v !== null && v.over === 1; },
    stale: function (v) { return v !== null && v.stale > 0; }
  };
  var SORT_KEYS = {
    score: function (r) { return r[SCORE] === "unscored" ? null : Number(r[SCORE]); },
    issues: function (r) { return r[MAJORITY] * 100000 + r[SEVERE]; },
    cost: function (r) { return r[COST]; },
    id: function (r) { return r[ID]; }
  };
  var paged = section.dataset.layout === "paged";
  var rows = [];
  var inputOrder = [];
  var sortedBy = {};  // sort key -> every row position in that order
  var haystack = null;  // lower-case search text of each row, made at the first search
  var shown = [];  // positions of the rows that pass the filters, in the chosen order
  var view = null;  // draws `shown`: the table (single file) or the virtual list (paged)

  function state() {
    var e = form.elements;
    return { q: e.q.value.trim().toLowerCase(), score: e.score.value, category: e.category.value, tag: e.tag.value,
      release: e.release.value, outcome: e.outcome.value, review: e.review ? e.review.value : "", route: e.route.value,
      sort: e.sort.value };
  }

  function passes(row, position, s) {
    return (s.score === "" || row[SCORE] === s.score) &&
      (s.category === "" || row[CATEGORIES].indexOf(s.category) >= 0) &&
      (s.tag === "" || row[TAGS].indexOf(s.tag) >= 0) &&
      (s.release === "" || (row[RELEASE] ? "yes" : "no") === s.release) &&
      (s.outcome === "" || row[OUTCOME] === s.outcome) &&
      (!REVIEWED[s.review] || REVIEWED[s.review](row[REVIEW] || null)) &&
      (s.route === "" || (row[ROUTE] || "-") === s.route) &&
      (s.q === "" || haystack[position].indexOf(s.q) >= 0);
  }

  function ordered(key) {
    var name = key.charAt(0) === "-" ? key.slice(1) : key;
    var value = SORT_KEYS[name];
    if (!value) { return inputOrder; }
    if (!sortedBy[key]) {
      var values = rows.map(value), descending = key !== name;
      sortedBy[key] = inputOrder.slice().sort(function (a, b) {
        var x = values[a], y = values[b];
        if (x === y) { return a - b; }
        if (x === null || x === undefined) { return 1; }  // unknown last, whatever the direction
        if (y === null || y === undefined) { return -1; }
        return (x < y) === descending ? 1 : -1;
      });
    }
    return sortedBy[key];
  }

  function apply() {
    var s = state();
    if (s.q !== "" && haystack === null) {
      haystack = rows.map(function (r) { return (r[ID] + " " + r[TEXT]).toLowerCase(); });
    }
    var order = ordered(s.sort);
    shown = [];
    for (var i = 0; i < order.length; i++) {
      if (passes(rows[order[i]], order[i], s)) { shown.push(order[i]); }
    }
    count.textContent = shown.length + " of " + rows.length + " shown";
    view.draw(true);
    section.dataset.state = "ready";
  }

  function preset() {
    var wanted = new URLSearchParams(window.location.search);
    PRESETS.forEach(function (name) {
      var field = form.elements[name], value = wanted.get(name);
      if (!field || value === null) { return; }
      if (field.tagName === "INPUT") { field.value = value; return; }
      // Only a value that is one of the options: anything else leaves the filter at "all".
      Array.prototype.forEach.call(field.options, function (option) {
        if (option.value === value) { field.value = value; }
      });
    });
  }

  function start() {
    for (var i = 0; i < rows.length; i++) { inputOrder.push(i); }
    preset();
    form.addEventListener("change", apply);
    form.addEventListener("input", function (event) { if (event.target.name === "q") { apply(); } });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.addEventListener("reset", function () { window.setTimeout(apply, 0); });
    form.hidden = false;
    apply();
    window.addEventListener("hashchange", route);
    route();
  }

  // #/t/<id> and #/t/<id>/T<turn>
  function route() {
    var match = /^#\/t\/([^/]*)(?:\/T(\d+))?$/.exec(window.location.hash);
    if (!match) { return; }
    var id;
    try { id = decodeURIComponent(match[1]); } catch (error) { return; }
    view.open(id, match[2] || null);
  }

  function link(id) { return "#/t/" + encodeURIComponent(id); }

  // --- the single file: the index table is the data --------------------------------------------

  function tableView() {
    var body = section.querySelector("table.index tbody");
    var trs = Array.prototype.slice.call(body.querySelectorAll("tr[data-trajectory]"));
    var parse = function (text) { try { return JSON.parse(text || "[]"); } catch (error) { return []; } };
    var number = function (text) { return text === "" || text === undefined ? null : Number(text); };
    rows = trs.map(function (tr) {
      var d = tr.dataset;
      return [d.id, d.score, d.release === "yes" ? 1 : 0, number(d.turns), Number(d.issues || 0), Number(d.severe || 0),
        Number(d.minority || 0), number(d.cost), d.outcome || "unknown", d.route || null, parse(d.categories),
        parse(d.tags), d.text || "", 1, d.review ? parse(d.review) : null];
    });
    var lastOrder = inputOrder;
    return {
      draw: function () {
        var visible = new Uint8Array(rows.length);
        shown.forEach(function (position) { visible[position] = 1; });
        trs.forEach(function (tr, position) {
          tr.classList.toggle("hidden-by-filter", !visible[position]);
          var block = document.getElementById(tr.dataset.trajectory);
          if (block) { block.classList.toggle("hidden-by-filter", !visible[position]); }
        });
        var order = ordered(form.elements.sort.value);
        if (order !== lastOrder) {
          order.forEach(function (position) { body.appendChild(trs[position]); });
          lastOrder = order;
        }
      },
      open: function (id, turn) {
        var tr = trs.filter(function (candidate) { return candidate.dataset.id === id; })[0];
        if (!tr) { return; }
        var target = (turn && document.getElementById(tr.dataset.trajectory + "-T" + turn)) ||
          document.getElementById(tr.dataset.trajectory);
        if (target) { target.scrollIntoView(); }
      }
    };
  }

  // --- paged: the index from report_data/index.js, one viewer shard at a time -------------------

  var ROW_HEIGHT = 30, MAX_ROWS = 20, KEPT_SHARDS = 8;
  var SCRIPT_URL = /^report_data\/(index|v\/[0-9]+)\.js$/;
  var policy = null;

  function scriptUrl(url) {
    return policy ? policy.createScriptURL(url) : url;
  }

  function loadScript(url, onError) {
    var script = document.createElement("script");
    script.onload = function () { script.remove(); };
    script.onerror = function () { script.remove(); onError(); };
    script.src = scriptUrl(url);
    document.head.appendChild(script);
  }

  function usd(value) {
    if (value === null || value === undefined) { return "–"; }
    return "$" + (value > 0 && value < 1 ? value.toFixed(4) : value.toFixed(2));
  }

  function pagedView() {
    var list = document.getElementById("index");
    var body = list.querySelector(".vbody"), space = list.querySelector(".vspace"), box = list.querySelector(".vrows");
    var viewer = document.getElementById("viewer");
    var pool = [], current = -1, waiting = null, shards = new Map(), loading = {}, starts = [], positionOf = null;
    var drawPending = false;

    function cell(row, className) {
      var span = document.createElement("span");
      span.className = className;
      row.appendChild(span);
      return span;
    }

    function makeRow() {
      var a = document.createElement("a");
      a.className = "vrow";
      cell(a, "c-id");
      cell(cell(a, "c-score"), "badge");
      var release = cell(a, "c-release");
      cell(release, "pill");
      cell(release, "pill human").textContent = "human";
      cell(a, "c-outcome");
      cell(a, "c-turns num");
      cell(a, "c-issues");
      cell(a, "c-cost num");
      cell(a, "c-route");
      box.appendChild(a);
      return a;
    }

    function fill(a, position) {
      var r = rows[position], cells = a.children;
      a.href = link(r[ID]);
      a.classList.toggle("current", position === current);
      cells[0].textContent = r[ID];
      cells[0].title = r[TEXT];
      var badge = cells[1].firstChild;
      badge.textContent = r[SCORE] === "unscored" ? "none" : r[SCORE];
      badge.className = "badge score-" + (/^([0-9]+|unscored)$/.test(r[SCORE]) ? r[SCORE] : "other");
      var pill = cells[2].firstChild;
      pill.textContent = r[RELEASE] ? "released" : "held";
      pill.className = "pill " + (r[RELEASE] ? "released" : "held");
      var human = cells[2].lastChild, review = r[REVIEW] || null;
      human.hidden = review === null;
      human.title = review === null ? "" : "human decision" + (review.by ? " by " + review.by : "") + "; judges: score " +
        (review.score === null ? "none" : review.score) + ", " + (review.release ? "released" : "held");
      cells[3].textContent = r[OUTCOME];
      cells[4].textContent = r[TURNS] === null ? "–" : String(r[TURNS]);
      var issues = r[MAJORITY] ? r[MAJORITY] + (r[SEVERE] ? " (" + r[SEVERE] + " severe)" : "") + " · " + r[CATEGORIES].join(", ") : "none";
      cells[5].textContent = issues + (r[MINORITY] ? " +" + r[MINORITY] + " minority" : "");
      cells[5].className = "c-issues" + (r[SEVERE] ? " severe" : r[MAJORITY] ? " minor" : " muted");
      cells[6].textContent = usd(r[COST]);
      cells[7].textContent = r[ROUTE] || "–";
    }

    function draw(reset) {
      if (reset) { body.scrollTop = 0; }
      body.style.height = (Math.min(Math.max(shown.length, 1), MAX_ROWS) * ROW_HEIGHT) + "px";
      space.style.height = (shown.length * ROW_HEIGHT) + "px";
      var first = Math.max(0, Math.floor(body.scrollTop / ROW_HEIGHT) - 5);
      var last = Math.min(shown.length, first + MAX_ROWS + 10);
      box.style.transform = "translateY(" + (first * ROW_HEIGHT) + "px)";
      while (pool.length < last - first) { pool.push(makeRow()); }
      for (var i = 0; i < pool.length; i++) {
        pool[i].hidden = first + i >= last;
        if (!pool[i].hidden) { fill(pool[i], shown[first + i]); }
      }
    }

    body.addEventListener("scroll", function () {
      if (drawPending) { return; }
      drawPending = true;
      window.requestAnimationFrame(function () { drawPending = false; draw(false); });
    }, { passive: true });

    function say(text) {
      viewer.textContent = "";
      var p = document.createElement("p");
      p.className = "warning";
      p.textContent = text;
      viewer.appendChild(p);
    }

    function shardOf(position) {
      var low = 0, high = starts.length - 1;
      while (low < high) {
        var middle = (low + high + 1) >> 1;
        if (starts[middle] <= position) { low = middle; } else { high = middle - 1; }
      }
      return low;
    }

    function navigation(position) {
      var nav = document.createElement("nav");
      nav.className = "viewer-nav no-print";
      var at = shown.indexOf(position);
      var add = function (text, target) {
        var a = document.createElement(target === null ? "span" : "a");
        a.textContent = text;
        if (target !== null) { a.href = target; } else { a.className = "muted"; }
        nav.appendChild(a);
      };
      add("← previous", at > 0 ? link(rows[shown[at - 1]][ID]) : null);
      add(at >= 0 ? (at + 1) + " of " + shown.length + " shown" : "not among the rows shown", null);
      add("next →", at >= 0 && at + 1 < shown.length ? link(rows[shown[at + 1]][ID]) : null);
      add("↑ index", "#trajectories");
      return nav;
    }

    function show() {
      var shard = shards.get(shardOf(waiting.position));
      var html = shard.sections[waiting.position - shard.start];
      viewer.textContent = "";
      viewer.appendChild(navigation(waiting.position));
      var holder = document.createElement("div");
      holder.innerHTML = policy ? policy.createHTML(html) : html;
      viewer.appendChild(holder);
      var target = waiting.turn && holder.querySelector("[id$='-T" + waiting.turn + "']");
      (target || viewer).scrollIntoView();
      waiting = null;
    }

    return {
      index: function (data, meta) {
        rows = data;
        starts = meta.shards;
        list.hidden = false;
        start();
      },
      shard: function (number, first, sections) {
        delete loading[number];
        shards.set(number, { start: first, sections: sections });
        if (shards.size > KEPT_SHARDS) { shards.delete(shards.keys().next().value); }
        if (waiting && shardOf(waiting.position) === number) { show(); }
      },
      failed: function (text) {
        section.dataset.state = "error";
        say(text);
      },
      draw: draw,
      open: function (id, turn) {
        if (positionOf === null) {
          positionOf = new Map();
          rows.forEach(function (r, position) { if (!positionOf.has(r[ID])) { positionOf.set(r[ID], position); } });
        }
        var position = positionOf.get(id);
        if (position === undefined) { say("This run has no trajectory with the id " + id + "."); return; }
        current = position;
        draw(false);
        if (!rows[position][VIEWABLE]) {
          say(id + " has a score row but no trajectory in trajectories.jsonl: there is nothing to show.");
          return;
        }
        waiting = { position: position, turn: turn };
        var number = shardOf(position);
        if (shards.has(number)) { show(); return; }
        if (loading[number]) { return; }
        loading[number] = true;
        loadScript("report_data/v/" + number + ".js", function () {
          delete loading[number];
          say("Cannot read report_data/v/" + number + ".js: keep the report_data folder beside report.html.");
        });
      }
    };
  }

  if (!paged) {
    view = tableView();
    start();
    return;
  }
  if (window.trustedTypes && window.trustedTypes.createPolicy) {
    policy = window.trustedTypes.createPolicy("trajudge", {
      // Only the sections of report_data/v/*.js reach this: HTML our own autoescaped templates rendered.
      createHTML: function (html) { return html; },
      createScriptURL: function (url) {
        if (!SCRIPT_URL.test(url)) { throw new TypeError("not a file of report_data: " + url); }
        return url;
      }
    });
  }
  view = pagedView();
  Object.defineProperty(window, "trajudgeData", {
    value: function (kind, first, second, third) {
      if (kind === "index") { view.index(first, second); } else if (kind === "shard") { view.shard(first, second, third); }
    }
  });
  loadScript("report_data/index.js", function () {
    view.failed("Cannot read report_data/index.js: keep the report_data folder beside report.html, or serve the run with judge view RUN.");
  });
}());
