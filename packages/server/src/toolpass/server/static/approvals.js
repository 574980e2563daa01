// The approvals page: refresh the audit tail, and say when new requests arrive.
// No framework, no build step; every value is set with textContent (never as HTML).
"use strict";
(function () {
  var main = document.querySelector("main[data-pending]");
  var rows = document.getElementById("audit-rows");
  if (!main) return;
  var shown = main.getAttribute("data-pending");
  var columns = ["time", "user", "tool", "outcome", "why"];

  // Whether the person is filling in a decision (a reload would lose it).
  function typing() {
    var inputs = document.querySelectorAll(
      "form.decide input[name=reason], form.decide input[name=minutes], form.decide select");
    for (var i = 0; i < inputs.length; i++) {
      var chosen = inputs[i].tagName === "SELECT" ? inputs[i].value !== "once" : inputs[i].value;
      if (chosen || inputs[i] === document.activeElement) return true;
    }
    return false;
  }

  function render(audit) {
    if (!rows) return;
    var body = document.createDocumentFragment();
    audit.forEach(function (event) {
      var tr = document.createElement("tr");
      columns.forEach(function (name) {
        var td = document.createElement("td");
        td.textContent = event[name];
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    rows.replaceChildren(body);
  }

  function poll() {
    fetch("/approvals/live", { credentials: "same-origin", cache: "no-store" })
      .then(function (answer) {
        if (answer.status === 401) { window.location.assign("/approvals"); return null; }
        return answer.ok ? answer.json() : null;
      })
      .then(function (live) {
        if (!live) return;
        render(live.audit);
        if (live.pending.join(" ") !== shown) {
          if (typing()) document.getElementById("new-requests").hidden = false;
          else window.location.reload();
        }
      })
      .catch(function () { /* the next poll tries again */ });
  }

  window.setInterval(poll, 2000);
})();
