// The pit scoreboard: roads, counts, limits, meters, announcements. The roads arrive
// computed (controller/display/roads.py); this file only draws them.
"use strict";

(() => {
  const {el, cardFace, setText, money, shortMoney, wagerName} = Display;
  const LETTER = {banker: "B", player: "P", tie: "T"};

  function visibleColumns(road) {
    const cols = parseInt(getComputedStyle(road).getPropertyValue("--cols"), 10);
    return Number.isFinite(cols) && cols > 0 ? cols : 20;
  }

  // Every cell stays in the DOM; the strip slides left so the newest columns are in view.
  function drawRoad(road, cells, make) {
    const strip = el("div", {class: "strip"});
    let maxCol = -1;
    cells.forEach((cell, i) => {
      const node = make(cell, i);
      node.style.gridColumn = String(cell.col + 1);
      node.style.gridRow = String(cell.row + 1);
      strip.append(node);
      maxCol = Math.max(maxCol, cell.col);
    });
    const offset = Math.max(0, maxCol + 2 - visibleColumns(road));
    strip.style.setProperty("--offset", String(offset));
    road.replaceChildren(strip);
    road.dataset.cells = String(cells.length);
  }

  function pairDots(node, cell) {
    if (cell.banker_pair) node.append(el("i", {class: "pair banker-pair"}));
    if (cell.player_pair) node.append(el("i", {class: "pair player-pair"}));
  }

  function drawRoads(data) {
    drawRoad(document.getElementById("bead-plate"), data.bead_plate, (cell, i) => {
      const node = el("div", {class: "bead-cell " + cell.winner, "data-round": i + 1,
                              "data-winner": cell.winner, text: LETTER[cell.winner]});
      pairDots(node, cell);
      return node;
    });
    drawRoad(document.getElementById("big-road"), data.big_road, (cell, i) => {
      const ties = cell.ties + (i === 0 ? data.leading_ties : 0);
      const node = el("div", {class: "big-cell " + cell.winner, "data-index": i + 1,
                              "data-winner": cell.winner, "data-ties": ties});
      if (ties > 0) node.append(el("i", {class: "tie-slash"}), ties > 1 ?
        el("b", {class: "tie-count", text: String(ties)}) : null);
      pairDots(node, cell);
      return node;
    });
    setText("leading-ties", data.big_road.length === 0 && data.leading_ties > 0 ?
      `${data.leading_ties} tie${data.leading_ties > 1 ? "s" : ""} so far` : "");
    for (const [id, key] of [["big-eye-boy", "big_eye_boy"], ["small-road", "small_road"],
                             ["cockroach-pig", "cockroach_pig"]]) {
      drawRoad(document.getElementById(id), data[key], (cell, i) =>
        el("div", {class: "mark " + cell.mark, "data-index": i + 1, "data-mark": cell.mark}));
    }
    for (const winner of ["banker", "player"]) {
      const row = document.getElementById("predict-" + winner);
      for (const slot of row.querySelectorAll("i[data-road]")) {
        const mark = data.predictions[winner][slot.dataset.road];
        slot.className = "mark " + (mark || "none");
        slot.dataset.mark = mark || "";
      }
    }
    for (const [key, value] of Object.entries(data.counts)) setText("count-" + key, value);
    drawLastHand(data.hands[data.hands.length - 1], data.counts.rounds);
    drawHands21(data.hands);
  }

  function drawLastHand(hand, rounds) {
    const box = document.getElementById("last-result");
    box.dataset.round = String(hand ? rounds : 0);
    document.getElementById("player-cards").replaceChildren(
      ...(hand ? hand.player.map(cardFace) : []));
    document.getElementById("banker-cards").replaceChildren(
      ...(hand ? hand.banker.map(cardFace) : []));
    setText("player-total", hand ? hand.player_total : "");
    setText("banker-total", hand ? hand.banker_total : "");
    const winner = document.getElementById("winner");
    winner.className = "winner " + (hand ? hand.winner : "");
    winner.textContent = hand ? (hand.winner === "tie" ? "TIE" : hand.winner.toUpperCase() + " WINS") : "";
  }

  function drawHands21(hands) {
    const table = document.getElementById("hands21");
    const rows = [el("tr", {}, el("th", {text: "Hand"}), el("th", {text: "Player"}),
                     el("th", {text: ""}), el("th", {text: "Banker"}), el("th", {text: ""}),
                     el("th", {text: "Result"}))];
    for (const hand of hands.slice().reverse()) {
      const bust = (t) => (t > 21 ? " bust" : "");
      rows.push(el("tr", {class: hand.winner, "data-round-no": hand.round_no},
        el("td", {text: String(hand.round_no)}),
        el("td", {class: "cards"}, ...hand.player.map(cardFace)),
        el("td", {class: "total" + bust(hand.player_total), text: String(hand.player_total)}),
        el("td", {class: "cards"}, ...hand.banker.map(cardFace)),
        el("td", {class: "total" + bust(hand.banker_total), text: String(hand.banker_total)}),
        el("td", {class: "result " + hand.winner, text: hand.winner.toUpperCase()})));
    }
    table.replaceChildren(...rows);
  }

  // "heavenly_9" -> "Heavenly 9"; a mystery level is named for itself; Royal 9's levels
  // (mega, major, minor) follow the game's name.
  function meterName(meter) {
    if (meter.level === "mystery") return "Must-Hit-By Mystery";
    const game = wagerName(meter.game || meter.progressive);
    return ["progressive", "", undefined].includes(meter.level) ? game
      : game + " \u00b7 " + wagerName(meter.level);
  }

  function drawLive(live) {
    const table = live.table || {};
    document.body.classList.toggle("game-21", table.game === "21-baccarat");
    setText("table-name", table.name || table.table_id || "Table");
    setText("table-game", (table.game === "21-baccarat" ? "21 Baccarat" : "Baccarat") +
      (table.decks ? ` \u00b7 ${table.decks} decks` : ""));
    setText("shoe-no", live.shoe_no || "\u2013");
    setText("round-no", live.round_no || "\u2013");
    const announce = document.getElementById("announce");
    let kind = "none", text = "";
    if (!live.daemon_connected) { kind = "offline"; text = "TABLE OFFLINE"; }
    else if (live.fault || live.state === "device_fault" || live.state === "out_of_order") {
      kind = "paused"; text = "TABLE PAUSED";
    } else if (live.state === "betting_open") { kind = "open"; text = "PLACE YOUR BETS"; }
    else if (live.no_more_bets) { kind = "closed"; text = "NO MORE BETS"; }
    else if (live.state === "closed") { kind = "paused"; text = "TABLE CLOSED"; }
    else if (["shuffling", "cut", "burn", "opening", "end_of_shoe"].includes(live.state)) {
      kind = "paused"; text = "SHUFFLE";
    }
    announce.dataset.kind = kind;
    announce.textContent = text;
    document.getElementById("last-hand").hidden = !live.last_hand;
    const limits = document.getElementById("limits");
    limits.replaceChildren(...(table.limits || []).map((l) => el("tr", {"data-wager": l.wager},
      el("th", {text: wagerName(l.wager)}),
      el("td", {text: shortMoney(l.min_cents)}), el("td", {class: "dash", text: "\u2013"}),
      el("td", {text: shortMoney(l.max_cents)}))));
    const meters = document.getElementById("meters");
    document.getElementById("meters-panel").hidden = live.meters.length === 0;
    meters.replaceChildren(...live.meters.map((m) => el("div", {
        class: "meter" + (m.stale ? " stale" : ""), "data-progressive": m.progressive,
        "data-level": m.level, "data-amount": m.amount_cents, "data-sequence": m.sequence},
      el("span", {class: "meter-name", text: meterName(m)}),
      el("b", {class: "meter-amount", text: money(m.amount_cents)}))));
    const light = document.getElementById("win-light");
    light.hidden = !live.award;
    if (live.award) {
      light.dataset.seat = live.award.seat;
      light.replaceChildren(el("b", {text: "JACKPOT"}),
        el("span", {text: `Seat ${live.award.seat} \u00b7 ${wagerName(live.award.progressive)}` +
                          (live.award.level ? ` ${wagerName(live.award.level)}` : "")}),
        el("span", {class: "amount", text: money(live.award.amount_cents)}));
    }
    setText("daemon-state", live.daemon_connected ? `${table.table_id || ""} \u00b7 ${live.state}`
                                                  : "daemon offline: showing the last known state");
  }

  Display.connect(["roads", "live"], {roads: drawRoads, live: drawLive});
})();
