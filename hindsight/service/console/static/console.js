// hindsight console: the only script (served from /console/static, no inline script: CSP).
// `hindsight console` prints a URL ending in #key=<API key>: fill the sign-in form with it
// and send it, then drop the key from the address bar. The fragment never reaches the server.
(function () {
  "use strict";
  var form = document.getElementById("login");
  if (!form || !window.location.hash) {
    return;
  }
  var params = new URLSearchParams(window.location.hash.slice(1));
  var key = params.get("key");
  history.replaceState(null, "", window.location.pathname + window.location.search);
  if (key) {
    form.elements.namedItem("key").value = key;
    form.submit();
  }
})();
