// Code that wraps the way Python reads. On a narrow screen a long line wraps at a
// space (never inside a name), and its continuation is indented four columns past
// the line's own indentation (at most half the box), so that a wrapped line still
// sits inside its block.
// Each line is its own element (mkdocs.yml: line_spans); this sets its hanging
// indent from its leading spaces. tests/test_docs_browser.py checks it at 390 px.
(function () {
  "use strict";
  function hang() {
    document.querySelectorAll(".md-typeset pre > code > span[id^='__span']:not([data-hung])")
      .forEach(function (line) {
        line.setAttribute("data-hung", "");
        var lead = /^ */.exec(line.textContent)[0].length;
        if (lead) {
          // at most half the box: a deep continuation line (57 spaces in exercises/s06)
          // would otherwise hang past a phone's edge
          line.style.paddingLeft = "min(" + (lead + 4) + "ch, 50%)";
          line.style.textIndent = "max(" + -(lead + 4) + "ch, -50%)";
        }
      });
  }
  new MutationObserver(hang).observe(document.documentElement,
                                     {childList: true, subtree: true});
  hang();
})();
