// Code that wraps the way Python reads. On a narrow screen a long line wraps at a
// space (never inside a name), and its continuation is indented four columns past
// the line's own indentation, so that a wrapped line still sits inside its block.
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
          line.style.paddingLeft = (lead + 4) + "ch";
          line.style.textIndent = -(lead + 4) + "ch";
        }
      });
  }
  new MutationObserver(hang).observe(document.documentElement,
                                     {childList: true, subtree: true});
  hang();
})();
