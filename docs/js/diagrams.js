// Diagrams sized by width, and a click to see one at full size.
// Material draws each ```mermaid block into a <div class="mermaid"> as wide as the
// text column; the drawing keeps its natural size unless the column is narrower, so
// on a laptop its labels stay as large as the text around them (a tall diagram makes
// the page scroll, as text does). A click (or Enter) opens the drawing on its own,
// at its natural size or larger, over the page; a click or Escape closes it.
// On a phone the column is narrower than most drawings: a drawing is shrunk to at
// most MIN_SCALE of its natural size (labels of about 10 px) and its box scrolls
// sideways beyond that, with a shade at its edge and a line under it that say so.
// tests/test_docs_browser.py checks the label size at 1280 and 390 px, and the zoom.
(function () {
  "use strict";
  var MIN_SCALE = 0.65;

  // Material draws each diagram into a shadow root; an open one lets a click copy
  // the drawing (this runs before Material draws: it is loaded after its bundle,
  // which draws once Mermaid has loaded).
  var attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    return attach.call(this, Object.assign({}, init, {mode: "open"}));
  };

  function svgOf(host) {
    return host.shadowRoot ? host.shadowRoot.querySelector("svg") : null;
  }

  function fit(host, tries) {
    var svg = svgOf(host);
    if (!svg) {
      if (tries > 0) setTimeout(function () { fit(host, tries - 1); }, 100);
      return;
    }
    var natural = svg.viewBox.baseVal.width;
    svg.style.width = "";
    svg.style.maxWidth = natural + "px";
    host.style.overflowX = "";
    var scrolls = natural && host.clientWidth < natural * MIN_SCALE;
    if (scrolls) {
      svg.style.maxWidth = "none";
      svg.style.width = Math.round(natural * MIN_SCALE) + "px";
      host.style.overflowX = "auto";
    }
    // A box that scrolls says so: a shade at its edge (css/extra.css) and a line under it.
    host.toggleAttribute("data-scrolls", !!scrolls);
    var hint = host.nextElementSibling;
    if (!(hint && hint.classList.contains("diagram-hint"))) {
      if (!scrolls) return;
      hint = document.createElement("p");
      hint.className = "diagram-hint";
      hint.textContent = "\u2194 Wider than the screen: scroll it sideways, or tap it to see it whole.";
      host.after(hint);
    }
    hint.hidden = !scrolls;
  }

  function close() {
    var open = document.querySelector(".diagram-zoom");
    if (open) open.remove();
  }

  function zoom(host) {
    var svg = svgOf(host);
    if (!svg) return;
    var box = document.createElement("div");
    box.className = "diagram-zoom";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "The diagram at full size (click or Escape to close)");
    var copy = svg.cloneNode(true);
    // Its own styles live in the shadow root: carry them over with the drawing.
    if (host.shadowRoot) {
      host.shadowRoot.querySelectorAll("style").forEach(function (s) {
        box.appendChild(s.cloneNode(true));
      });
    }
    var natural = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width;
    copy.removeAttribute("style");
    copy.setAttribute("width", Math.max(natural || 0, window.innerWidth * 0.9));
    copy.removeAttribute("height");
    box.appendChild(copy);
    box.addEventListener("click", close);
    document.body.appendChild(box);
  }

  function prepare() {
    document.querySelectorAll("div.mermaid:not([data-zoomable])").forEach(function (host) {
      host.setAttribute("data-zoomable", "");
      host.setAttribute("tabindex", "0");
      host.setAttribute("title", "Click to see the diagram at full size");
      host.addEventListener("click", function () { zoom(host); });
      host.addEventListener("keydown", function (e) {
        if (e.key === "Enter") zoom(host);
      });
      fit(host, 100);
    });
  }

  window.addEventListener("resize", function () {
    document.querySelectorAll("div.mermaid").forEach(function (host) { fit(host, 0); });
  });

  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") close();
  });
  new MutationObserver(prepare).observe(document.documentElement,
                                        {childList: true, subtree: true});
})();
