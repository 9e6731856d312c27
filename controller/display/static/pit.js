// The pit page: every table of the pit from the pit service's event stream (MQTT behind it).
// Each table's card is rebuilt when its status changes; fault ages tick every second.
"use strict";

(() => {
  const {el, money, connect} = Display;
  const tables = new Map();  // table_id -> the last view the service sent
  const WINNER_LETTER = {banker: "B", player: "P", tie: "T"};

  function age(since) {
    if (!since) return "";
    const s = Math.max(0, Math.round(Date.now() / 1000 - since));
    return s < 60 ? s + " s" : s < 3600 ? Math.floor(s / 60) + " min" : Math.floor(s / 3600) + " h";
  }

  function card(t) {
    const alive = t.alive || "unknown";
    const faults = t.faults || [];
    const link = Object.entries(t.link || {});
    const down = link.filter(([, why]) => why);
    const shoe = t.shoe || {}, round = t.round || {}, witness = t.witness || {};
    const node = el("section", {class: "table", "data-table": t.table_id, "data-alive": alive,
                                "data-state": t.state || "", "data-faulted": faults.length ? "1" : "0",
                                "data-round": round.round_id ?? "", "data-sequence": t.sequence ?? ""},
      el("h2", {}, el("span", {text: t.table_id}),
         el("span", {class: "alive", "data-alive": alive, text: alive === "online" ? "live" : alive.toUpperCase()})),
      el("div", {}, el("span", {class: "state", text: (t.state || "–").replace(/_/g, " ")}),
         el("span", {class: "muted", text: `  shoe ${shoe.shoe_no ?? "–"} · hand ${shoe.rounds ?? "–"}` +
                                           (shoe.cards_left != null ? ` · ${shoe.cards_left} cards left` : "")})));
    if (faults.length) {
      node.append(el("ul", {class: "faults"}, ...faults.map((f) =>
        el("li", {class: "fault", "data-code": f.code, "data-since": f.since},
           el("b", {text: `${f.device}: ${f.code}`}), " ",
           el("span", {class: "age", "data-since": f.since, text: age(f.since)}),
           f.detail ? el("span", {class: "muted", text: " " + f.detail}) : null,
           el("span", {class: "action", text: f.action || ""})))));
    }
    if (link.length) {
      node.append(el("div", {class: "link", "data-up": down.length ? "0" : "1",
                             text: down.length ? "linked wager unavailable: " + down.map(([, why]) => why).join("; ")
                                               : "link up"}));
    }
    node.append(el("div", {class: "meters"}, ...(t.meters || []).map((m) =>
      el("span", {class: "meter", "data-progressive": m.progressive, "data-level": m.level,
                  "data-linked": m.linked ? "1" : "0", "data-amount": m.amount_cents ?? ""},
         el("span", {class: "muted", text: (m.linked ? "linked " : "") + m.level + " "}),
         el("b", {text: money(m.amount_cents) + (m.stale ? " (stale)" : "")})))));
    node.append(el("div", {class: "results"}, ...(t.results || []).map((r) =>
      el("span", {class: "result", "data-winner": r.winner, "data-round": r.round_id,
                  text: WINNER_LETTER[r.winner] || "?"}))));
    // Why the witness is not up (its last error, or the check that failed), for the call to
    // a technician: heads pending are unwitnessed play.
    const why = witness.link && witness.link !== "up" && witness.detail ? " · " + witness.detail : "";
    node.append(el("div", {class: "witness muted", "data-link": witness.link || "",
                           text: "witness: " + (witness.link || "–") +
                                 (witness.pending_heads ? ` (${witness.pending_heads} pending)` : "") +
                                 why}));
    return node;
  }

  // At most NAMED tables by name in the bar, then how many more: a whole pit lost at once
  // (its switch, the broker) named in full would fill a phone's screen with the bar that
  // stays in view, and leave no room for the cards (each lost card is marked itself).
  const NAMED = 5;
  function named(ids) {
    return ids.length <= NAMED ? ids.join(", ") :
      `${ids.slice(0, NAMED).join(", ")} and ${ids.length - NAMED} more`;
  }

  function render(changed) {
    const main = document.getElementById("tables");
    for (const id of changed) {
      const fresh = card(tables.get(id));
      const old = main.querySelector(`.table[data-table="${CSS.escape(id)}"]`);
      if (old) old.replaceWith(fresh);
      else {
        const after = [...main.children].find((n) => n.dataset.table > id);
        main.insertBefore(fresh, after || null);
      }
    }
    // The tables to look at, by name: on a screen too small for the whole pit the header
    // stays in view (pit.css) while the cards scroll, so none of them is out of sight.
    const all = [...tables.values()].sort((a, b) => (a.table_id < b.table_id ? -1 : 1));
    const lost = all.filter((t) => t.alive !== "online").map((t) => t.table_id);
    const faulted = all.filter((t) => (t.faults || []).length).map((t) => t.table_id);
    Display.setText("summary", `${all.length} tables · ` +
      (lost.length ? `not live: ${named(lost)}` : "all live") + " · " +
      (faulted.length ? `faults: ${named(faulted)}` : "no faults"));
  }

  connect(["pit"], {
    pit(message) {
      const feed = document.getElementById("feed");
      feed.dataset.connected = message.feed.connected ? "1" : "0";
      feed.textContent = message.feed.connected ? "broker: connected"
                                                : "broker: not connected (showing the last known)";
      if (message.full) {
        tables.clear();
        document.getElementById("tables").replaceChildren();
      }
      for (const t of message.tables) tables.set(t.table_id, t);
      render(message.tables.map((t) => t.table_id));
    },
  });

  setInterval(() => {
    for (const node of document.querySelectorAll(".age[data-since]")) {
      const text = age(Number(node.dataset.since));
      if (node.textContent !== text) node.textContent = text;
    }
  }, 1000);
})();
