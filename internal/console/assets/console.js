// Live updates: the server says when something the pages show changed
// (it watches as you); the page fetches itself again and replaces its
// content, unless you have started a selection, which is then kept and a
// banner offers to reload.
(function () {
  if (!window.EventSource) { return; }
  var busy = false;
  var touched = false;
  document.addEventListener("change", function (e) {
    if (e.target && e.target.name === "revision") { touched = true; }
  });
  var events = new EventSource("/events");
  // A browser keeps few connections per server (six over HTTP/1.1): the
  // stream is closed as soon as the page goes, so that moving between
  // pages never waits for one.
  window.addEventListener("pagehide", function () { events.close(); });
  events.addEventListener("changed", function () {
    if (touched) { document.getElementById("stale").hidden = false; return; }
    if (busy) { return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var main = doc.getElementById("main");
      if (main) { document.getElementById("main").innerHTML = main.innerHTML; }
    }).finally(function () { busy = false; });
  });
})();
