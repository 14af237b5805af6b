// Index filters (score, category, tag, release) and open-folds-for-printing. Our own code only: it reads
// data-* attributes and toggles a class; it never builds HTML from the data. Without JavaScript the filter
// form stays hidden and every trajectory is shown. Filters can be preset from the address, e.g.
// report.html?score=2&category=semantic, so a filtered view can be shared as a link.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (form) {
    var names = ["score", "category", "tag", "release"];
    var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-trajectory]"));
    var count = document.getElementById("filter-count");
    var parse = function (text) { try { return JSON.parse(text || "[]"); } catch (e) { return []; } };
    var apply = function () {
      var score = form.elements.score.value, category = form.elements.category.value;
      var tag = form.elements.tag.value, release = form.elements.release.value;
      var shown = 0;
      rows.forEach(function (row) {
        var ok = (score === "" || row.dataset.score === score) &&
          (category === "" || parse(row.dataset.categories).indexOf(category) >= 0) &&
          (tag === "" || parse(row.dataset.tags).indexOf(tag) >= 0) &&
          (release === "" || row.dataset.release === release);
        row.classList.toggle("hidden-by-filter", !ok);
        var section = document.getElementById(row.dataset.trajectory);
        if (section) { section.classList.toggle("hidden-by-filter", !ok); }
        if (ok) { shown += 1; }
      });
      if (count) { count.textContent = shown + " of " + rows.length + " shown"; }
    };
    var preset = new URLSearchParams(window.location.search);
    names.forEach(function (name) {
      var select = form.elements[name], wanted = preset.get(name);
      if (select && wanted !== null) {
        // Only a value that is one of the options: anything else leaves the filter at "all".
        Array.prototype.forEach.call(select.options, function (option) {
          if (option.value === wanted) { select.value = wanted; }
        });
      }
    });
    form.addEventListener("change", apply);
    form.addEventListener("reset", function () { window.setTimeout(apply, 0); });
    form.hidden = false;
    apply();
  }
  // Closed <details> do not print; open them for the printout and restore them afterwards.
  var reopened = [];
  window.addEventListener("beforeprint", function () {
    reopened = Array.prototype.filter.call(document.querySelectorAll("details:not([open])"), function (d) {
      d.open = true; return true;
    });
  });
  window.addEventListener("afterprint", function () { reopened.forEach(function (d) { d.open = false; }); reopened = []; });
}());
