// The Chat page: what the bot sends comes as server-sent events (each message keyed by its ref, replaced as it
// grows or is edited); what the person types, presses or attaches is posted with the session's CSRF token.
// Everything is shown as text (textContent), never as markup.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root");
  var talk = document.getElementById("talk");
  if (!root || !talk || !window.EventSource) { return; }
  var csrf = talk.getAttribute("data-csrf");
  var log = document.getElementById("talk-log");
  var status = document.getElementById("talk-status");
  var form = document.getElementById("talk-form");
  var textBox = document.getElementById("talk-text");
  var fileBox = document.getElementById("talk-file");
  var sendButton = document.getElementById("talk-send");
  var lastId = "";
  var source = null;

  function say(text, bad) {
    status.textContent = text;
    status.className = bad ? "bad" : "";
  }

  function atBottom() { return log.scrollHeight - log.scrollTop - log.clientHeight < 40; }

  function render(item) {
    var el = document.createElement("div");
    el.className = "msg " + item.role + (item.draft ? " draft" : "");
    el.setAttribute("data-ref", item.ref);
    var text = document.createElement("div");
    text.className = "text";
    text.textContent = item.text;
    el.appendChild(text);
    if (item.files && item.files.length) {
      var files = document.createElement("div");
      files.className = "files";
      item.files.forEach(function (f) {
        var a = document.createElement("a");
        a.href = root + "/talk/files/" + encodeURIComponent(f.id);
        a.setAttribute("download", f.name);
        a.textContent = "📎 " + f.name;
        files.appendChild(a);
      });
      el.appendChild(files);
    }
    (item.buttons || []).forEach(function (row) {
      var line = document.createElement("div");
      line.className = "row";
      row.forEach(function (b) {
        var button = document.createElement("button");
        button.type = "button";
        button.textContent = b.label;
        button.addEventListener("click", function () { press(el, item.ref, b.payload); });
        line.appendChild(button);
      });
      el.appendChild(line);
    });
    return el;
  }

  function upsert(item) {
    var empty = document.getElementById("talk-empty");
    if (empty) { empty.remove(); }
    var follow = atBottom();
    var fresh = render(item);
    var old = log.querySelector('[data-ref="' + CSS.escape(item.ref) + '"]');
    if (old) { log.replaceChild(fresh, old); } else { log.appendChild(fresh); }
    if (item.role !== "user") { say("", false); }
    if (follow) { log.scrollTop = log.scrollHeight; }
  }

  function press(el, ref, payload) {
    el.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    var body = new URLSearchParams({ csrf: csrf, payload: payload, ref: ref });
    fetch(root + "/talk/press", { method: "POST", body: body, credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { window.location = root + "/login?next=" + encodeURIComponent(root + "/talk"); return null; }
      return r.json();
    }).then(function (answer) {
      if (answer === null) { return; }
      if (!answer.ok) {
        say(answer.error || "Refused.", true);
        el.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      } else {
        say("", false);  // the prompt itself now says how it was answered
      }
    }, function () {
      say("Not sent: the bot cannot be reached. Press again.", true);
      el.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
    });
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!textBox.value.trim() && !fileBox.value) { return; }
    sendButton.disabled = true;
    say("Sending…", false);
    fetch(root + "/talk/send", { method: "POST", body: new FormData(form), credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { window.location = root + "/login?next=" + encodeURIComponent(root + "/talk"); return null; }
      return r.json();
    }).then(function (answer) {
      sendButton.disabled = false;
      if (answer === null) { return; }
      if (answer.ok) {
        textBox.value = "";
        fileBox.value = "";
        say("", false);
      } else {
        say(answer.error || "Not sent.", true);
      }
    }, function () {
      sendButton.disabled = false;
      say("Not sent: the bot cannot be reached. Send it again.", true);
    });
  });

  textBox.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });

  function listen() {
    source = new EventSource(root + "/talk/events" + (lastId ? "?since=" + encodeURIComponent(lastId) : ""));
    function seen(e) { if (e.lastEventId) { lastId = e.lastEventId; } }
    source.addEventListener("reset", function () {
      log.querySelectorAll("[data-ref]").forEach(function (el) { el.remove(); });
    });
    source.addEventListener("item", function (e) { seen(e); upsert(JSON.parse(e.data)); });
    source.addEventListener("gone", function (e) {
      seen(e);
      var old = log.querySelector('[data-ref="' + CSS.escape(JSON.parse(e.data).ref) + '"]');
      if (old) { old.remove(); }
    });
    source.addEventListener("typing", function () { say("The bot is writing…", false); });
    source.addEventListener("sync", function (e) {
      seen(e);
      talk.setAttribute("data-synced", "1");
      if (status.textContent === "Connecting…" || status.textContent === "Reconnecting…") { say("", false); }
      log.scrollTop = log.scrollHeight;
    });
    source.addEventListener("error", function () {
      say("Reconnecting…", false);
      // The browser retries by itself; a stream it will not retry (signed out, a proxy's 502) is opened anew.
      if (source.readyState === EventSource.CLOSED) {
        fetch(root + "/talk/talk.js", { credentials: "same-origin" }).then(function (r) {
          if (r.status === 401) { window.location = root + "/login?next=" + encodeURIComponent(root + "/talk"); }
        }, function () { return null; });
        setTimeout(listen, 1000);
      }
    });
  }
  listen();
})();
