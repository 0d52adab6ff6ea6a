// Diagrams that fit a screen. Material draws each ```mermaid block into a
// <div class="mermaid"> as wide as the text column, and the drawing scales with that
// width. On a laptop, a drawing taller than 80% of the window is narrowed until it
// fits, so a reader sees the whole of it at once; on a phone it keeps the column's
// width (smaller would be unreadable) and the page scrolls, as it does for text.
// tests/test_docs_browser.py checks both.
(function () {
  "use strict";
  var SHARE = 0.8;
  var WIDE = 768;  // px: narrower windows are phones

  // The drawing may be narrower than its box (it is never drawn larger than its
  // natural size), so one step may not be enough: narrow again until it fits.
  function fit(host, tries) {
    var limit = SHARE * window.innerHeight;
    if (window.innerWidth >= WIDE && host.offsetHeight > limit + 1 && tries > 0) {
      host.style.maxWidth = Math.floor(host.offsetWidth * limit / host.offsetHeight) + "px";
      host.style.marginLeft = host.style.marginRight = "auto";
      requestAnimationFrame(function () { fit(host, tries - 1); });
    }
  }

  function refit(host) {
    host.style.maxWidth = "";
    fit(host, 4);
  }

  function fitNew() {
    document.querySelectorAll("div.mermaid:not([data-fitted])").forEach(function (host) {
      host.setAttribute("data-fitted", "");
      requestAnimationFrame(function () { refit(host); });
    });
  }

  new MutationObserver(fitNew).observe(document.documentElement,
                                       {childList: true, subtree: true});
  window.addEventListener("resize", function () {
    document.querySelectorAll("div.mermaid").forEach(refit);
  });
})();
