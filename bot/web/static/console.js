// Live inbox: the server says when the set of pending requests changed; new ones are added and answered ones
// removed, so a form someone is filling in is never replaced under them.  Whenever the stream (re)opens, after a
// restart of the gateway too, the inbox is read again: a request raised while it was away shows without a reload.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root");
  var badge = document.getElementById("pending-count");
  var list = document.getElementById("inbox");
  if (!root || !window.EventSource) { return; }
  var again = null;
  function later() {
    if (again === null) { again = setTimeout(function () { again = null; refresh(); }, 1000); }
  }
  function refresh() {
    fetch(root + "/inbox/items", { credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { window.location = root + "/login"; return null; }
      if (!r.ok) { later(); return null; }
      return r.text();
    }).then(function (html) {
      if (html === null) { return; }
      var fresh = document.createElement("div");
      fresh.innerHTML = html;
      var items = fresh.querySelectorAll("article.pending");
      if (badge) { badge.textContent = String(items.length); badge.className = items.length ? "badge n" : "badge"; }
      if (!list) { return; }
      var keep = {};
      items.forEach(function (item) { keep[item.id] = true; });
      list.querySelectorAll("article.pending").forEach(function (old) { if (!keep[old.id]) { old.remove(); } });
      var before = list.firstChild;
      items.forEach(function (item) {
        if (!document.getElementById(item.id)) { list.insertBefore(item, before); } else { before = document.getElementById(item.id).nextSibling; }
      });
      var empty = document.getElementById("inbox-empty");
      if (empty) { empty.hidden = items.length > 0; }
    }, later);
  }
  function listen() {
    var source = new EventSource(root + "/events");
    source.addEventListener("inbox", refresh);
    // The stream says what changed after it opened: whatever came while it was (re)connecting is read now.
    source.addEventListener("open", refresh);
    source.addEventListener("error", function () {
      // The browser retries by itself after a dropped connection; an answer it will not retry (a proxy's 502
      // while the gateway restarts, or 401 when signed out: refresh goes to the sign-in page) closes the stream
      // for good: open a new one.
      if (source.readyState === EventSource.CLOSED) { refresh(); setTimeout(listen, 1000); }
    });
  }
  listen();
})();
