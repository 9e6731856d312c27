// The pit scoreboard: roads, counts, limits, meters, announcements. The roads arrive
// computed (controller/display/roads.py); this file only draws them.
"use strict";

(() => {
  const {el, cardFace, setText, money, shortMoney, wagerName} = Display;
  // The bead's letter: the second language's character on a bilingual board (庄 闲 和 read
  // from across the pit by the players who use them), else the main language's.
  function shortLang() {
    const langs = Labels.shown();
    return langs[langs.length - 1];
  }
  let lastRoads = null, languagesDrawn = "";

  // How many whole cells fit across the road as laid out now (the CSS sizes the road to
  // its panel and sets the cell size).
  function visibleColumns(road) {
    const cell = parseFloat(getComputedStyle(road).getPropertyValue("--cell")) || 40;
    return Math.max(1, Math.floor((road.clientWidth + 1) / cell));
  }

  // Every cell stays in the DOM; the strip slides left so the newest columns are in view,
  // with one empty column after them for the next hand, as the pit's boards scroll. The
  // oldest columns leave the view first.
  function drawRoad(road, cells, make) {
    const strip = el("div", {class: "strip"});
    let maxCol = -1;
    cells.forEach((cell, i) => {
      const node = make(cell, i);
      node.style.gridColumn = String(cell.col + 1);
      node.style.gridRow = String(cell.row + 1);
      node.dataset.col = String(cell.col);
      strip.append(node);
      maxCol = Math.max(maxCol, cell.col);
    });
    road.replaceChildren(strip);
    road.dataset.cells = String(cells.length);
    road.dataset.columns = String(maxCol + 1);
    scrollRoad(road);
  }

  function scrollRoad(road) {
    const strip = road.firstElementChild;
    if (!strip) return;
    const columns = parseInt(road.dataset.columns || "0", 10);
    const visible = visibleColumns(road);
    const offset = Math.max(0, columns + 1 - visible);
    strip.style.setProperty("--offset", String(offset));
    road.dataset.visibleColumns = String(visible);
    road.dataset.offset = String(offset);
  }

  function pairDots(node, cell) {
    if (cell.banker_pair) node.append(el("i", {class: "pair banker-pair"}));
    if (cell.player_pair) node.append(el("i", {class: "pair player-pair"}));
  }

  function drawRoads(data) {
    lastRoads = data;
    drawRoad(document.getElementById("bead-plate"), data.bead_plate, (cell, i) => {
      const node = el("div", {class: "bead-cell " + cell.winner, "data-round": i + 1,
                              "data-winner": cell.winner, lang: Labels.tag(shortLang()),
                              text: Labels.word(shortLang(), "short_" + cell.winner)});
      pairDots(node, cell);
      return node;
    });
    drawRoad(document.getElementById("big-road"), data.big_road, (cell, i) => {
      const ties = cell.ties + (i === 0 ? data.leading_ties : 0);
      const node = el("div", {class: "big-cell " + cell.winner, "data-index": i + 1,
                              "data-winner": cell.winner, "data-ties": ties});
      if (ties > 0) node.append(el("i", {class: "tie-slash"}));
      if (ties > 1) node.append(el("b", {class: "tie-count", text: String(ties)}));
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
    for (const [key, value] of Object.entries(data.percent)) setText("percent-" + key, value + "%");
    const streak = document.getElementById("streak-now");
    streak.dataset.winner = data.streak.winner || "";
    streak.dataset.length = String(data.streak.length);
    streak.textContent = data.streak.winner ?
      `${Labels.main("short_" + data.streak.winner)} ${data.streak.length}` : "\u2013";
    setText("longest-banker", `${Labels.main("short_banker")} ${data.streak.longest_banker}`);
    setText("longest-player", `${Labels.main("short_player")} ${data.streak.longest_player}`);
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
    winner.replaceChildren(...(!hand ? [] : Labels.spans((lang) => hand.winner === "tie" ?
      Labels.word(lang, "tie").toUpperCase() :
      `${Labels.word(lang, hand.winner).toUpperCase()}${lang === "en" ? " " : ""}` +
      Labels.word(lang, "wins"))));
  }

  function drawHands21(hands) {
    const table = document.getElementById("hands21");
    const rows = [el("tr", {}, el("th", {}, ...Labels.nodes("hand")),
                     el("th", {}, ...Labels.nodes("player")), el("th", {text: ""}),
                     el("th", {}, ...Labels.nodes("banker")), el("th", {text: ""}),
                     el("th", {text: ""}))];
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
    fitHands21();
  }

  // The newest hands first, as many as the panel holds: older rows are hidden, never cut.
  function fitHands21() {
    const table = document.getElementById("hands21");
    const panel = table.parentElement;
    const rows = [...table.querySelectorAll("tr[data-round-no]")];
    for (const row of rows) row.hidden = false;
    if (!panel.clientHeight) return;  // not shown (a Baccarat table)
    const bottom = panel.getBoundingClientRect().bottom -
      parseFloat(getComputedStyle(panel).paddingBottom || "0");
    for (const row of rows.reverse()) {
      if (row.getBoundingClientRect().bottom <= bottom) break;
      row.hidden = true;
    }
  }


  // "heavenly_9" -> "Heavenly 9"; a mystery level is named for itself; Royal 9's levels
  // (mega, major, minor) follow the game's name.
  function meterName(meter) {
    if (meter.level === "mystery") return "Must-Hit-By Mystery";
    const game = wagerName(meter.game || meter.progressive);
    return ["progressive", "", undefined].includes(meter.level) ? game
      : game + " \u00b7 " + wagerName(meter.level);
  }

  // Rows shown a page at a time when there are more than their panel holds: the limits (a
  // table with side wagers), the meters of a table with more progressives than fit. Every
  // row is on the board, each page for PAGE_MS; the panel's heading says which page.
  const PAGE_MS = 6000;
  function pager(boxId, noteId) {
    let page = 0, timer = null, size = "";
    // A box whose size changes (a screen turned, a font loaded, the meters' panel shown) is
    // paged again; showing a page leaves its size as it was.
    const sizeOf = (box) => `${box.clientWidth}x${box.clientHeight}`;
    new ResizeObserver(() => {
      if (timer && sizeOf(document.getElementById(boxId)) !== size) show();
    }).observe(document.getElementById(boxId));
    function show() {
      const box = document.getElementById(boxId);
      const rows = [...box.children];
      // A page is the rows from its first on that the box holds whole, found from the
      // layout itself: a wrapped name makes its row taller than the others. The limits'
      // grid, the landscape meters' column and the portrait meters' row fill in order, so
      // the rows that fit are always a run from the first.
      const firsts = [];
      for (let first = 0; first < rows.length;) {
        rows.forEach((row, i) => { row.hidden = i < first; });
        const edge = box.getBoundingClientRect();
        const bottom = edge.top + box.clientHeight + 0.5, right = edge.left + box.clientWidth + 0.5;
        const fits = (row) => { const r = row.getBoundingClientRect();
                                return r.bottom <= bottom && r.right <= right; };
        let next = first + 1;  // one row a page at least, even one larger than the box
        while (next < rows.length && fits(rows[next])) next += 1;
        firsts.push(first);
        first = next;
      }
      const pages = Math.max(1, firsts.length);
      const shown = page % pages;
      const from = firsts[shown] || 0;
      const to = shown + 1 < firsts.length ? firsts[shown + 1] : rows.length;
      rows.forEach((row, i) => { row.hidden = i < from || i >= to; });
      size = sizeOf(box);
      box.dataset.page = String(shown + 1);
      box.dataset.pages = String(pages);
      setText(noteId, pages > 1 ? `${shown + 1}/${pages}` : "");
      if (!timer) timer = setInterval(() => { page += 1; show(); }, PAGE_MS);
    }
    return {show, first() { page = 0; show(); }};
  }
  const limitsPages = pager("limits", "limits-page");
  const metersPages = pager("meters", "meters-page");

  let limitsKey = "";
  function drawLimits(limits) {
    const box = document.getElementById("limits");
    const key = JSON.stringify(limits);
    if (key === limitsKey) return;  // paged by its pager: every PAGE_MS, and when its box resizes
    limitsKey = key;
    box.replaceChildren(...limits.map((l) => el("div", {class: "limit", "data-wager": l.wager},
      el("span", {class: "limit-name", text: wagerName(l.wager)}),
      el("b", {class: "limit-range",
               text: l.max_cents === null || l.max_cents === undefined ?
                 `${shortMoney(l.min_cents || 0)}+` :
                 `${shortMoney(l.min_cents || 0)}\u2013${shortMoney(l.max_cents)}`}))));
    for (const row of box.querySelectorAll(".limit[data-wager='banker'], " +
                                           ".limit[data-wager='player'], .limit[data-wager='tie']")) {
      row.querySelector(".limit-name").replaceChildren(...Labels.nodes(row.dataset.wager));
    }
    limitsPages.first();
  }

  // An amount's size follows its length (scoreboard.css, .meter-amount): set through the
  // style object, which the pages' Content-Security-Policy allows (a style attribute not).
  function meterAmount(cents) {
    const amount = el("b", {class: "meter-amount", text: money(cents)});
    amount.style.setProperty("--chars", String(amount.textContent.length));
    return amount;
  }

  function drawMeters(meters) {
    document.getElementById("meters-panel").hidden = meters.length === 0;
    document.body.classList.toggle("has-meters", meters.length > 0);
    document.getElementById("meters").replaceChildren(...meters.map((m) => el("div", {
        class: "meter" + (m.stale ? " stale" : ""), "data-progressive": m.progressive,
        "data-level": m.level, "data-amount": m.amount_cents, "data-sequence": m.sequence},
      el("span", {class: "meter-name", text: meterName(m)}), meterAmount(m.amount_cents))));
    if (meters.length) metersPages.show();  // the same page: a meter moves every wager
  }

  // The table's name at 34 px, or as large as fits down to the floor's 28 px (the size
  // rule), or on two lines: an operator's long name is never cut off. Its room is what the
  // header's other columns leave it, so it is fitted again whenever that room changes: a
  // wider announcement, a turned screen, a font loaded (its box is watched). The name's own
  // size does not move its width (the column is minmax(0, 1fr)), so a fit never re-fits.
  let fittedFor = "";
  function fitName() {
    const name = document.getElementById("table-name");
    const key = `${name.textContent}|${name.clientWidth}`;
    if (key === fittedFor) return;
    fittedFor = key;
    name.classList.remove("wraps");
    for (let px = 34; px >= 28; px -= 1) {
      name.style.fontSize = `${px}px`;
      if (name.scrollWidth <= name.clientWidth + 1) return;
    }
    name.classList.add("wraps");
  }
  new ResizeObserver(fitName).observe(document.getElementById("table-name"));

  // The name and the game's line on more than three lines (the longest name and dealer's
  // name allowed take four; one line each is 75 px, a wrapped name 100) take their room
  // from the roads (scoreboard.css, tall-header), whose columns are counted again. Their
  // height does not depend on the board, so this settles at once.
  const TALL_ID_PX = 110;
  const id = document.querySelector(".table-id");
  new ResizeObserver(() => {
    const tall = id.offsetHeight > TALL_ID_PX;
    if (tall === document.body.classList.contains("tall-header")) return;
    document.body.classList.toggle("tall-header", tall);
    for (const road of document.querySelectorAll(".road")) scrollRoad(road);
  }).observe(id);

  function drawLive(live) {
    const table = live.table || {};
    Labels.use(table.languages);
    if (Labels.languages.join(",") !== languagesDrawn) {
      languagesDrawn = Labels.languages.join(",");
      if (lastRoads) drawRoads(lastRoads);  // the beads' and the result's words
    }
    document.body.classList.toggle("game-21", table.game === "21-baccarat");
    // The corner's number as the service chose it (DisplayServiceConfig.corner_number), or
    // none when the table's id is too long for it: no corner then, the id is in the footer.
    document.querySelector(".table-number").hidden = !table.number;
    setText("table-number", table.number || "");
    setText("table-name", table.name || table.table_id || "Table");
    setText("table-game", (table.game === "21-baccarat" ? "21 Baccarat" : "Baccarat") +
      (table.decks ? ` \u00b7 ${table.decks} decks` : ""));
    document.getElementById("dealer-line").hidden = !live.dealer;
    setText("dealer-name", live.dealer || "");
    setText("shoe-no", live.shoe_no || "\u2013");
    setText("hand-no", live.hand_no || "\u2013");
    setText("round-no", live.round_no || "\u2013");
    const announce = document.getElementById("announce");
    announce.dataset.kind = live.banner;
    if (live.banner === "none") announce.replaceChildren();
    else Labels.fill(announce, live.banner);
    document.getElementById("last-hand").hidden = !live.last_hand_shown;
    drawMeters(live.meters);  // first: the meters' panel takes room from the limits' (portrait)
    drawLimits(table.limits || []);
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
    fitName();  // after the announcement: its width is the name's room
  }

  // A screen turned or resized: the roads show as many columns as now fit.
  window.addEventListener("resize", () => {
    for (const road of document.querySelectorAll(".road")) scrollRoad(road);
    fitHands21();  // (the name and the limits' and meters' pagers watch their own boxes)
  });
  Display.follow(["roads", "live"], {roads: drawRoads, live: drawLive});
})();
