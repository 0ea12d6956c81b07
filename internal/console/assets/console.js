// Live updates: the server says when something the pages show changed
// (it watches as you); the page fetches itself again and replaces its
// content, unless you have started a selection, which is then kept and a
// banner offers to reload.
(function () {
  if (!window.EventSource) { return; }
  var busy = false;
  var touched = false;
  var leaving = false;
  document.addEventListener("change", function (e) {
    if (e.target && e.target.name === "revision") { touched = true; }
  });
  // A form on its way (an approval) is never replaced under it.
  document.addEventListener("submit", function () { leaving = true; });
  var events = new EventSource("/events");
  // The server watches from before it answers: once the stream is open,
  // every later change reaches this page (tests wait for this mark).
  events.addEventListener("open", function () { document.documentElement.setAttribute("data-live", "open"); });
  // A browser keeps few connections per server (six over HTTP/1.1): the
  // stream is closed as soon as the page goes, so that moving between
  // pages never waits for one.
  window.addEventListener("pagehide", function () { events.close(); });
  events.addEventListener("changed", function () {
    if (leaving) { return; }
    if (touched) { document.getElementById("stale").hidden = false; return; }
    if (busy) { return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var main = doc.getElementById("main");
      var here = document.getElementById("main");
      // Only what changed is redrawn: a change the page does not show
      // leaves it (and a button about to be clicked) alone.
      if (main && !leaving && here.innerHTML !== main.innerHTML) { here.innerHTML = main.innerHTML; }
    }).finally(function () { busy = false; });
  });
})();
