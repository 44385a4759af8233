// fairsched live dashboard: renders the broker's snapshot
// (GET v1/dashboard), pushed as server-sent events by
// v1/dashboard/events; polls every second where EventSource is missing,
// when the stream cannot be opened, or with ?poll in the page's URL.
// Same origin only: every URL here is relative to the page.
(function () {
  "use strict";

  var POLL_MS = 1000;
  var renders = 0;
  var polling = false;
  var source = null;

  function $(id) {
    return document.getElementById(id);
  }

  // ---- formatting -------------------------------------------------------

  var intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

  function int(n) {
    return n === null || n === undefined ? "—" : intFmt.format(n);
  }

  function pad2(n) {
    return (n < 10 ? "0" : "") + n;
  }

  // A duration in milliseconds: "850 ms", "12.3 s", "4 m 05 s", "2 h 03 m", "3 d 04 h".
  function duration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) return "—";
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.round(ms) + " ms";
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + " m " + pad2(Math.floor(s % 60)) + " s";
    var h = Math.floor(m / 60);
    if (h < 24) return h + " h " + pad2(m % 60) + " m";
    return Math.floor(h / 24) + " d " + pad2(h % 24) + " h";
  }

  // Wall-clock time of a broker-clock instant.
  function wall(d, t) {
    var x = new Date(d.epoch_ms + t);
    return pad2(x.getHours()) + ":" + pad2(x.getMinutes()) + ":" + pad2(x.getSeconds());
  }

  // Three significant digits, with a thousands separator for big numbers.
  function real(v) {
    if (v === null || v === undefined || !isFinite(v)) return "—";
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1000) return intFmt.format(Math.round(v));
    if (a >= 0.01) return v.toPrecision(3);
    return v.toExponential(2);
  }

  function ratio(v) {
    return v === null || v === undefined || !isFinite(v) ? "—" : v.toFixed(2);
  }

  // ---- DOM helpers (text only: names come from users) -----------------------

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // A cell; `na` (a reason) makes it "—" with that reason as its tooltip.
  function cell(col, text, opts) {
    opts = opts || {};
    var td = el("td", opts.num ? "num" : opts.cls || "");
    if (opts.num && opts.cls) td.className += " " + opts.cls;
    td.dataset.col = col;
    if (opts.na) {
      td.textContent = "—";
      td.className += " na";
      td.title = opts.na;
    } else {
      td.textContent = text;
      if (opts.title) td.title = opts.title;
      if (opts.value !== undefined && opts.value !== null) td.dataset.value = String(opts.value);
    }
    return td;
  }

  function fill(tableId, rows, emptyText, columns) {
    var table = $(tableId);
    var body = document.createElement("tbody");
    if (rows.length === 0) {
      var tr = el("tr", "empty");
      var td = el("td", "", emptyText);
      td.colSpan = columns;
      tr.appendChild(td);
      body.appendChild(tr);
    } else {
      rows.forEach(function (r) {
        body.appendChild(r);
      });
    }
    table.replaceChild(body, table.tBodies[0]);
  }

  function setText(id, text, title) {
    var e = $(id);
    e.textContent = text;
    if (title !== undefined) e.title = title;
  }

  function satClass(v) {
    if (v === null || v === undefined) return "";
    if (v < 0.5) return "sat-low";
    if (v >= 1) return "sat-high";
    return "";
  }

  // ---- rendering ------------------------------------------------------------

  function notDefined(d, what, who) {
    return "Not defined under the configured policy (order " + d.policy.order +
      (d.policy.control ? ", control " + d.policy.control : "") + "): " + what + " is computed by " + who + ".";
  }

  function renderHeader(d) {
    var p = d.policy;
    setText("policy-order", p.order, p.order);
    setText("policy-allocate", p.allocate, p.allocate);
    setText("policy-control", p.control || "none", p.control || "no control");
    var eta = $("policy-eta");
    if (p.defines.eta_u && p.eta_u !== null) {
      eta.textContent = real(p.eta_u) + (p.tau_u !== null ? " (τ " + real(p.tau_u) + ")" : "");
      eta.title = "η_u at the controller's last evaluation; priorities raised so far: " + int(p.priority_changes);
      eta.classList.remove("na");
    } else {
      eta.textContent = "—";
      eta.title = notDefined(d, "η_u", "the workflow-fairness control");
      eta.classList.add("na");
    }
    var c = d.counts;
    setText("waiting-count", int(c.waiting));
    setText("running-count", int(c.running));
    setText("completed-count", int(c.completed));
    setText("failed-count", int(c.failed));
    setText("killed-count", int(c.killed));
    setText("cancelled-count", int(c.cancelled));
    setText("held-count", int(c.held));
    setText("slots-count", int(c.busy_slots) + "/" + int(c.slots));
    setText("workers-count", int(c.workers));
    setText("clock", "broker clock " + duration(d.now_ms), "now " + wall(d, d.now_ms) + "; the clock counts from the database's creation");
    setText("uptime", "up " + duration(d.now_ms - d.started_ms));
  }

  function renderOrgs(d) {
    var noPhi = d.policy.defines.phi_psi ? null : notDefined(d, "φ − ψ", "the direct-contr order policy");
    var noUsage = d.policy.defines.usage ? null : notDefined(d, "the usage", "the fair-share order policy");
    var rows = d.orgs.map(function (o) {
      var tr = el("tr");
      tr.dataset.org = o.name;
      tr.appendChild(cell("name", o.name, { cls: "name", title: o.name }));
      tr.appendChild(cell("slots", int(o.slots), { num: true, value: o.slots }));
      tr.appendChild(cell("running", int(o.running), { num: true, value: o.running }));
      tr.appendChild(cell("waiting", int(o.waiting), { num: true, value: o.waiting }));
      tr.appendChild(cell("held", int(o.held), { num: true, value: o.held }));
      tr.appendChild(cell("satisfaction", ratio(o.satisfaction), {
        num: true,
        cls: satClass(o.satisfaction),
        value: o.satisfaction,
        na: o.satisfaction === null ? "Nothing was deserved yet: none of its users has had work waiting or running while slots were present" : null,
      }));
      tr.appendChild(cell("phi_minus_psi", real(o.phi_minus_psi), {
        num: true,
        value: o.phi_minus_psi,
        na: noPhi,
        title: o.phi !== null ? "φ " + real(o.phi) + ", ψ " + real(o.psi) + " (slot·s²)" : undefined,
      }));
      tr.appendChild(cell("usage", real(o.usage_slot_s), { num: true, value: o.usage_slot_s, na: noUsage }));
      return tr;
    });
    fill("orgs", rows, "no organization yet (fairsched admin org add NAME)", 8);
  }

  function renderQueue(d) {
    var q = d.queue;
    var several = q.machines.length > 1;
    document.querySelectorAll("#queue .machine-col").forEach(function (th) {
      th.hidden = !several;
    });
    var hidden = q.machines.reduce(function (n, m) {
      return n + m.hidden;
    }, 0);
    var note = int(q.waiting) + " waiting";
    if (hidden > 0) note += ", first " + int(q.tasks.length) + " shown";
    if (several) {
      note += " · " + q.machines.map(function (m) {
        return "machine " + m.machine + ": " + int(m.waiting) + " waiting, " + int(m.free) + "/" + int(m.slots) + " free";
      }).join(" · ");
    }
    setText("queue-note", note);
    var pos = 0;
    var machine = null;
    var rows = q.tasks.map(function (t) {
      if (t.machine !== machine) {
        machine = t.machine;
        pos = 0;
      }
      pos += 1;
      var tr = el("tr");
      tr.dataset.task = String(t.task);
      tr.appendChild(cell("position", int(pos), { num: true }));
      tr.appendChild(cell("task", String(t.task), { num: true, value: t.task }));
      tr.appendChild(cell("user", t.user, { cls: "name", title: t.user }));
      tr.appendChild(cell("org", t.org, { cls: "name", title: t.org }));
      var m = cell("machine", String(t.machine), { num: true });
      m.hidden = !several;
      tr.appendChild(m);
      tr.appendChild(cell("priority", String(t.priority), { num: true, value: t.priority }));
      tr.appendChild(cell("wait", duration(t.wait_ms), { num: true, value: t.wait_ms, title: "queued at " + wall(d, t.queued_ms) }));
      tr.appendChild(cell("runs", int(t.attempts), { num: true, value: t.attempts }));
      return tr;
    });
    fill("queue", rows, "no task waiting", 8);
  }

  function renderWorkers(d) {
    var rows = d.workers.map(function (w) {
      var tr = el("tr");
      tr.dataset.worker = String(w.worker);
      tr.appendChild(cell("worker", String(w.worker), { num: true, value: w.worker }));
      tr.appendChild(cell("host", w.host, { cls: "name", title: w.host }));
      tr.appendChild(cell("org", w.org, { cls: "name", title: w.org }));
      tr.appendChild(cell("slots", int(w.busy) + "/" + int(w.slots), { num: true, value: w.busy }));
      var runs = cell("running", "", { cls: "runs" });
      if (w.short_of_disk !== null && w.short_of_disk !== undefined) {
        var low = el("span", "disk-low", "short of disk");
        low.title = int(w.short_of_disk) + " bytes free in its work directory, below its --min-free-disk: it starts no run until space is freed";
        runs.appendChild(low);
      }
      if (w.tasks.length === 0) {
        runs.appendChild(el("span", "idle", "idle"));
      }
      w.tasks.forEach(function (r) {
        var s = el("span", "run", r.task + " · " + r.user + " · " + duration(d.now_ms - r.since_ms));
        s.dataset.task = String(r.task);
        s.title = "task " + r.task + " of " + r.user + " (" + r.org + "), run " + r.attempt + ", since " + wall(d, r.since_ms);
        runs.appendChild(s);
      });
      tr.appendChild(runs);
      tr.appendChild(cell("joined", wall(d, w.joined_ms), { num: true, title: "up " + duration(d.now_ms - w.joined_ms) }));
      return tr;
    });
    fill("workers", rows, "no worker holds a lease", 6);
  }

  function renderUsers(d) {
    var rows = d.users.map(function (u) {
      var tr = el("tr");
      tr.dataset.user = u.name;
      tr.appendChild(cell("name", u.name, { cls: "name", title: u.name }));
      tr.appendChild(cell("org", u.org, { cls: "name", title: u.org }));
      tr.appendChild(cell("running", int(u.running), { num: true, value: u.running }));
      tr.appendChild(cell("waiting", int(u.waiting) + (u.held > 0 ? " +" + int(u.held) : ""), {
        num: true,
        value: u.waiting,
        title: u.held > 0 ? int(u.held) + " held workflow tasks wait for their parents" : undefined,
      }));
      tr.appendChild(cell("completed", int(u.completed), { num: true, value: u.completed }));
      var bad = u.failed + u.killed;
      tr.appendChild(cell("failed", int(bad), {
        num: true,
        value: bad,
        title: int(u.failed) + " failed, " + int(u.killed) + " killed (and " + int(u.cancelled) + " cancelled)",
      }));
      tr.appendChild(cell("satisfaction", ratio(u.satisfaction), {
        num: true,
        cls: satClass(u.satisfaction),
        value: u.satisfaction,
        na: u.satisfaction === null ? "Nothing was deserved yet: it has had no work waiting or running while slots were present" : null,
      }));
      return tr;
    });
    if (d.users_hidden > 0) {
      var more = el("tr", "empty");
      var td = el("td", "", int(d.users_hidden) + " more users not shown");
      td.colSpan = 7;
      more.appendChild(td);
      rows.push(more);
    }
    fill("users", rows, "no user yet (fairsched admin user add NAME --org ORG)", 7);
  }

  function renderWorkflows(d) {
    var panel = $("workflows-panel");
    var defined = d.policy.defines.eta_u;
    panel.hidden = !defined && d.workflows.length === 0;
    setText("workflows-note", defined ? "Wᵢ at the controller's last evaluation" : "");
    var rows = d.workflows.map(function (w) {
      var tr = el("tr");
      tr.dataset.workflow = String(w.workflow);
      tr.appendChild(cell("workflow", String(w.workflow), { num: true, value: w.workflow }));
      tr.appendChild(cell("name", w.name, { cls: "name", title: w.name }));
      tr.appendChild(cell("user", w.user, { cls: "name", title: w.user }));
      tr.appendChild(cell("org", w.org, { cls: "name", title: w.org }));
      tr.appendChild(cell("w", real(w.w), { num: true, value: w.w }));
      return tr;
    });
    fill("workflows", rows, "no workflow with an active activity", 5);
  }

  function describe(e) {
    var who = e.user || "";
    switch (e.kind) {
      case "submit":
        return who + " submitted " + (e.count === 1 ? "task " + e.task : e.count + " tasks from " + e.task) +
          (e.held ? ", " + e.held + " held" : "");
      case "release":
        return "task " + e.task + " of " + who + " queued: its parents completed";
      case "start":
        return "task " + e.task + " of " + who + " started" + (e.worker !== undefined ? " on worker " + e.worker : "");
      case "requeue":
        return "task " + e.task + " of " + who + " back in the queue";
      case "end":
        return "task " + e.task + " of " + who + " " + e.outcome;
      case "worker-join":
        return "worker " + e.worker + " of " + e.org + " joined with " + e.slots + " slot" + (e.slots === 1 ? "" : "s");
      case "worker-leave":
        return "worker " + e.worker + " of " + e.org + " left";
      default:
        return e.kind;
    }
  }

  function renderEvents(d) {
    var rows = d.events.map(function (e) {
      var tr = el("tr");
      tr.dataset.kind = e.kind;
      tr.dataset.seq = String(e.seq);
      if (e.task !== undefined) tr.dataset.task = String(e.task);
      tr.appendChild(cell("time", wall(d, e.t_ms), { title: "broker clock " + duration(e.t_ms) }));
      var k = cell("kind", "");
      var badge = el("span", "kind", e.kind === "end" ? e.outcome : e.kind);
      badge.dataset.kind = e.kind;
      if (e.outcome) badge.dataset.outcome = e.outcome;
      k.appendChild(badge);
      tr.appendChild(k);
      var what = describe(e);
      tr.appendChild(cell("what", what, { title: what + (e.org ? " · " + e.org : "") }));
      return tr;
    });
    fill("events", rows, "nothing happened since the broker started", 3);
  }

  function render(d) {
    renderHeader(d);
    renderOrgs(d);
    renderQueue(d);
    renderWorkers(d);
    renderUsers(d);
    renderWorkflows(d);
    renderEvents(d);
    renders += 1;
    var u = $("updated");
    u.dataset.seq = String(renders);
    u.dataset.commits = String(d.commits);
    u.textContent = "updated " + wall(d, d.now_ms) + " · #" + renders;
  }

  function setState(state, why) {
    document.body.dataset.state = state;
    var s = $("status");
    s.dataset.state = state;
    var text = state === "live" ? (polling ? "live (polling)" : "live") : state === "disconnected" ? "disconnected" : "connecting…";
    setText("status-text", text, why || "");
  }

  function accept(text) {
    var d;
    try {
      d = JSON.parse(text);
    } catch (err) {
      setState("disconnected", "the broker sent something that is not JSON");
      return;
    }
    render(d);
    setState("live");
  }

  // ---- transport ------------------------------------------------------------

  function poll() {
    fetch("v1/dashboard", { cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(accept)
      .catch(function (err) {
        setState("disconnected", String(err));
      })
      .then(function () {
        window.setTimeout(poll, POLL_MS);
      });
  }

  function startPolling() {
    if (polling) return;
    polling = true;
    if (source) {
      source.close();
      source = null;
    }
    poll();
  }

  function stream() {
    var opened = false;
    source = new EventSource("v1/dashboard/events");
    source.addEventListener("snapshot", function (e) {
      opened = true;
      accept(e.data);
    });
    source.onerror = function () {
      setState("disconnected", "the event stream broke; reconnecting");
      // Never opened (a proxy that does not pass the stream, say) or
      // given up by the browser: poll instead.
      if (!opened || source.readyState === EventSource.CLOSED) startPolling();
    };
  }

  function start() {
    var forcePoll = /[?&]poll(=|&|$)/.test(window.location.search);
    if (forcePoll || typeof window.EventSource !== "function") {
      startPolling();
    } else {
      stream();
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
