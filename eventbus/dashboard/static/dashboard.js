/* eventbus dashboard: refreshes the live part of a page, and "select all" for bulk actions.
   Plain script, no library, nothing loaded from elsewhere. The pages work without it. */
(function () {
  "use strict";

  function refresh(live, every) {
    var busy = false;
    window.setInterval(function () {
      if (busy || document.hidden) { return; }
      busy = true;
      var url = new URL(window.location.href);
      url.searchParams.set("fragment", "1");
      url.searchParams.delete("notice");
      window.fetch(url.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.text();
        })
        .then(function (html) {
          live.innerHTML = html;
          live.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function () { /* keep what is shown; the next turn tries again */ })
        .then(function () { busy = false; });
    }, every);
  }

  function selectAll(event) {
    var box = event.target;
    if (!box.hasAttribute || !box.hasAttribute("data-select-all")) { return; }
    var form = box.form;
    if (!form) { return; }
    var boxes = form.querySelectorAll("input[type=checkbox][name=uuid]");
    for (var i = 0; i < boxes.length; i += 1) { boxes[i].checked = box.checked; }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var every = parseInt(document.body.getAttribute("data-refresh") || "2000", 10);
    var live = document.getElementById("live");
    if (live && live.hasAttribute("data-live") && every > 0) { refresh(live, every); }
    document.addEventListener("change", selectAll);
  });
}());
