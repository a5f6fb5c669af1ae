// seismo console: refreshes the page's content in place, creates and
// expires silences through the API, and copies drafts. Every URL starts
// with the route prefix the server put in <meta name="seismo-prefix">.
"use strict";
(function () {
  var prefix = document.querySelector('meta[name="seismo-prefix"]').content;
  var every = parseInt(document.querySelector('meta[name="seismo-refresh"]').content, 10) || 5000;
  var content = document.getElementById("content");
  var stamp = document.getElementById("refreshed");
  var busy = false;

  // refresh replaces the content with the server's fragment of this page.
  function refresh() {
    if (busy || document.hidden) return Promise.resolve();
    busy = true;
    var url = location.pathname + (location.search ? location.search + "&" : "?") + "fragment=1";
    return fetch(url, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + r.statusText);
        return r.text();
      })
      .then(function (html) {
        content.innerHTML = html;
        stamp.textContent = new Date().toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
        stamp.classList.remove("stale");
      })
      .catch(function (e) {
        stamp.textContent = "refresh failed: " + e.message;
        stamp.classList.add("stale");
      })
      .then(function () { busy = false; });
  }
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });

  // api calls the agent's JSON API and rejects with its error text.
  function api(method, path, body) {
    var opts = { method: method, headers: {} };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(prefix + path, opts).then(function (r) {
      return r.text().then(function (t) {
        var j = null;
        try { j = JSON.parse(t); } catch (e) { /* not JSON */ }
        if (!r.ok || (j && j.status === "error")) throw new Error((j && j.error) || (r.status + " " + t.trim()));
        return j;
      });
    });
  }

  // splitMatchers splits 'a="x", b=~"y,z"' (braces optional) at commas
  // outside quotes.
  function splitMatchers(s) {
    s = s.trim().replace(/^\{/, "").replace(/\}$/, "");
    var out = [], cur = "", quoted = false;
    for (var i = 0; i < s.length; i++) {
      var c = s[i];
      if (c === "\\" && quoted) { cur += c + (s[++i] || ""); continue; }
      if (c === '"') quoted = !quoted;
      if ((c === "," || c === "\n") && !quoted) { if (cur.trim()) out.push(cur.trim()); cur = ""; continue; }
      cur += c;
    }
    if (cur.trim()) out.push(cur.trim());
    return out;
  }

  // parseDuration reads 1d2h30m10s into milliseconds.
  function parseDuration(s) {
    var re = /(\d+)\s*([dhms])/g, m, ms = 0, unit = { d: 864e5, h: 36e5, m: 6e4, s: 1e3 };
    s = s.trim();
    if (!/^(\d+\s*[dhms]\s*)+$/.test(s)) return 0;
    while ((m = re.exec(s)) !== null) ms += parseInt(m[1], 10) * unit[m[2]];
    return ms;
  }

  var form = document.getElementById("silence-form");
  if (form) {
    var result = document.getElementById("silence-result");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var ms = parseDuration(form.duration.value);
      var matchers = splitMatchers(form.matchers.value);
      if (!ms || !matchers.length) {
        result.textContent = !ms ? "Duration must look like 30m, 2h or 1d." : "Give at least one matcher.";
        result.className = "bad";
        return;
      }
      var now = new Date();
      api("POST", "/api/v1/silences", {
        matchers: matchers,
        startsAt: now.toISOString(),
        endsAt: new Date(now.getTime() + ms).toISOString(),
        createdBy: form.createdBy.value,
        comment: form.comment.value
      }).then(function (j) {
        result.textContent = "Silence " + j.data.silenceID + " created.";
        result.className = "ok";
        form.comment.value = "";
        return refresh();
      }).catch(function (e) {
        result.textContent = "Not created: " + e.message;
        result.className = "bad";
      });
    });
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return copyBySelection(text); });
    }
    // Plain http behind a proxy has no clipboard API: select and copy.
    return copyBySelection(text);
  }

  function copyBySelection(text) {
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    var ok = document.execCommand("copy");
    document.body.removeChild(ta);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  // Buttons live inside refreshed content: delegate from the document.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button");
    if (!b) return;
    if (b.classList.contains("copy")) {
      copy(b.getAttribute("data-copy")).then(function () {
        b.textContent = "Copied";
      }, function (e) {
        b.textContent = "Copy failed: " + e.message;
      });
    } else if (b.classList.contains("expire")) {
      b.disabled = true;
      api("DELETE", "/api/v1/silences/" + encodeURIComponent(b.getAttribute("data-id")))
        .then(refresh)
        .catch(function (e) { b.disabled = false; b.textContent = "Expire failed: " + e.message; });
    }
  });
})();
