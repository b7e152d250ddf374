// workmap serve: follow the cluster through the page's event stream. Each `update` event
// carries the page's live part, rendered (and escaped) by the server; it replaces the old one
// in place, so the page is never reloaded.
(function () {
  "use strict";
  var connection = document.getElementById("connection");
  function setConnection(state) {
    if (connection) {
      connection.textContent = state;
      connection.dataset.state = state;
    }
  }

  function ago(seconds) {
    if (seconds < 60) return Math.max(0, Math.floor(seconds)) + "s";
    if (seconds < 3600) return Math.floor(seconds / 60) + "m";
    if (seconds < 48 * 3600) return Math.floor(seconds / 3600) + "h";
    return Math.floor(seconds / 86400) + "d";
  }
  function refreshAges() {
    var now = Date.now();
    document.querySelectorAll("time.age[datetime]").forEach(function (t) {
      t.textContent = ago((now - Date.parse(t.getAttribute("datetime"))) / 1000);
    });
  }
  setInterval(refreshAges, 5000);

  // Filters apply as soon as one is chosen.
  document.querySelectorAll("form.filters select").forEach(function (s) {
    s.addEventListener("change", function () { s.form.submit(); });
  });

  var live = document.getElementById("live");
  if (!live || !live.dataset.events || !window.EventSource) {
    setConnection("static");
    return;
  }
  var source = new EventSource(live.dataset.events);
  source.onopen = function () { setConnection("live"); };
  source.onerror = function () { setConnection("reconnecting"); };
  source.addEventListener("update", function (e) {
    live.innerHTML = e.data;
    live.dataset.version = e.lastEventId;
    setConnection("live");
    refreshAges();
  });
})();
