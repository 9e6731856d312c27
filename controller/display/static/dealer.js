// The dealer's screen: where the next card goes, what to do now, lock-out, faults, seats,
// and after a round what to pay each seat.
"use strict";

(() => {
  const {el, cardFace, setText, money, wagerName} = Display;

  // The daemon's `deal` prompt names the next card (controller/rules/baccarat.py NextCard).
  const ORDINAL = {first: "1st card", second: "2nd card", third: "3rd card",
                   draw: "draw a card", bonus_extra: "Bonus-only card"};
  function destination(next) {
    if (!next) return {hand: "", label: "\u2013", detail: ""};
    if (next === "burn") return {hand: "burn", label: "BURN", detail: "burn card, face down"};
    if (next === "discard") return {hand: "discard", label: "DISCARD", detail: "to the discard rack"};
    const [hand, ...rest] = next.split("_");
    const step = rest.join("_");
    if (hand !== "player" && hand !== "banker") return {hand: "", label: next.toUpperCase(), detail: ""};
    return {hand, label: hand.toUpperCase(), detail: ORDINAL[step] || step.replace(/_/g, " "),
            third: step === "third" || step === "draw"};
  }

  const PROMPTS = {
    inspect_cards: "Inspect the cards, then shuffle",
    cut: "Offer the cut, insert the cover card, load the shoe",
    burn: "Burn cards",
    place_bets: "Place your bets",
    deal: "Deal",
    last_hand: "Announce: last hand",
    shoe_complete: "Shoe complete: replace the decks",
    stop: "STOP: do not deal",
    resume: "Resume the game",
    hold_card: "Hold the card",
    discard: "Discard the card",
    set_aside: "Set the card aside",
    collect_vigorish: "Collect the marked vigorish",
    jackpot: "Jackpot: verify the win light, call the floor supervisor",
  };

  function promptText(prompt) {
    if (!prompt) return ["", ""];
    const action = prompt.action;
    let text = PROMPTS[action] || action.replace(/_/g, " ");
    if (action === "place_bets" && prompt.round_no) text += ` \u2013 hand ${prompt.round_no}`;
    if (action === "burn" && prompt.remaining !== undefined) text += `: ${prompt.remaining} more`;
    if (action === "deal" && prompt.next) {
      const d = destination(prompt.next);
      text = `Deal to the ${d.label}` + (d.detail ? ` (${d.detail})` : "");
    }
    if (action === "jackpot") text += ` \u2013 seat ${prompt.seat}, ${money(prompt.amount_cents)}`;
    // 631a.13(d)(2)(i): each seat's marked commission is in its seat's box (below); the
    // line above says how many and how much in all. Listed here, fourteen seats' amounts
    // took a landscape screen's height and pushed half the seats off it.
    if (action === "collect_vigorish" && prompt.seats) {
      const total = prompt.seats.reduce((sum, s) => sum + s.cents, 0);
      const seats = prompt.seats.length === 1 ? "1 seat" : `${prompt.seats.length} seats`;
      return [`${text}: ${seats}, ${money(total)}`, "each seat's amount is in its box below"];
    }
    return [text, prompt.detail || ""];
  }

  // One seat's settlements: the result, what to pay or take, the commission to collect
  // (or mark, 631a.13(d)(2)). A void round's returns say so.
  const RESULT = {win: "WIN", lose: "LOSE", push: "PUSH"};
  function payLines(owed, isVoid) {
    const box = el("div", {class: "seat-pay", "data-order": owed.order + 1});
    for (const w of owed.wagers) {
      const returned = isVoid && w.outcome === "push";
      const what = w.outcome === "win" ? `pay ${money(w.win_cents)}` :
        w.outcome === "lose" ? `take ${money(w.amount_cents)}` : `return ${money(w.amount_cents)}`;
      const line = el("div", {class: "pay-line " + w.outcome, "data-wager": w.wager,
                              "data-outcome": w.outcome, "data-win-cents": w.win_cents,
                              "data-vigorish-cents": w.vigorish_cents, "data-net-cents": w.net_cents},
        el("span", {class: "pay-result", text: returned ? "VOID" : RESULT[w.outcome] || w.outcome}),
        el("span", {class: "pay-wager", text: wagerName(w.wager)}),
        el("b", {class: "pay-amount", text: what}));
      if (w.vigorish_cents) {
        line.append(el("span", {class: "pay-vig",
          text: `${w.vig_marked_cents ? "mark" : "collect"} ${money(w.vigorish_cents)} commission`}));
      }
      box.append(line);
    }
    return box;
  }

  // Every seat's wagers and pay list whole on the screen, whatever the table: fourteen seats
  // of three wagers each, or six-figure amounts in a seventh of the width, are drawn smaller
  // (display.css, --seat-scale) rather than cut off or pushed off the screen: the dealer
  // pays from this list (631a.12(b)). The largest scale that fits; the last if none does.
  const SEAT_SCALES = [1, 0.9, 0.8, 0.7, 0.6];
  function fitSeats() {
    const box = document.getElementById("seats");
    for (const scale of SEAT_SCALES) {
      box.style.setProperty("--seat-scale", String(scale));
      if (box.scrollHeight <= box.clientHeight + 1 &&
          [...box.children].every((seat) => seat.scrollWidth <= seat.clientWidth + 1)) return;
    }
  }
  window.addEventListener("resize", fitSeats);

  function drawLive(live) {
    const table = live.table || {};
    setText("table-name", table.name || table.table_id || "Table");
    setText("shoe-no", live.shoe_no || "\u2013");
    setText("round-no", live.round_no || "\u2013");
    setText("cards-left", live.cards_left === null ? "\u2013" : live.cards_left);
    const lock = document.getElementById("lockout");
    const locked = live.state !== "betting_open";
    lock.dataset.locked = locked ? "1" : "0";
    lock.textContent = !live.daemon_connected ? "DAEMON OFFLINE" :
      live.state === "betting_open" ? "BETTING OPEN" :
      live.no_more_bets ? "LOCKED OUT \u2013 NO MORE BETS" : "LOCKED \u2013 " + live.state.replace(/_/g, " ").toUpperCase();

    const d = destination(live.next_card);
    const next = document.getElementById("next-card");
    next.dataset.next = live.next_card || "";
    next.dataset.hand = d.hand;
    next.classList.toggle("third", !!d.third);
    next.textContent = d.label;
    setText("next-detail", d.detail);

    const [text, detail] = promptText(live.prompt);
    const prompt = document.getElementById("prompt");
    prompt.dataset.action = live.prompt ? live.prompt.action : "";
    setText("prompt", text);
    // A fault's "stop" prompt carries the fault's detail and what clears it, which the fault
    // panel shows in full just below: said twice, the two took the seats' room (a long one
    // pushed fourteen seats out of their panel in landscape).
    const stopped = live.prompt && live.prompt.action === "stop" && live.fault;
    setText("prompt-detail", stopped ? "until the fault below is cleared" : detail);
    document.getElementById("last-hand").hidden = !live.last_hand;
    const notice = document.getElementById("notice");
    notice.hidden = !live.notice;
    notice.textContent = live.notice || "";

    const fault = document.getElementById("fault");
    fault.hidden = !live.fault;
    if (live.fault) {
      fault.dataset.code = live.fault.code || "";
      setText("fault-device", (live.fault.device || "table").toUpperCase());
      setText("fault-code", live.fault.code || "");
      setText("fault-detail", live.fault.detail || "");
      setText("fault-action", live.fault.action || "");
    }

    // Until the next round's first card, the hand panel shows the settled round's cards
    // and totals, and each seat what to pay, take and collect (the settlements' figures).
    const pay = live.pay;
    const settledHands = pay && !pay.void && live.cards.length === 0;
    for (const hand of ["player", "banker"]) {
      const cards = settledHands ? pay[hand] : live.cards.filter((c) => c.hand === hand).map((c) => c.card);
      document.getElementById(hand + "-cards").replaceChildren(...cards.map(cardFace));
      // While the hand is dealt, each hand's total so far (631a.6, 681a.3(d)); after the
      // settlement, the daemon's own.
      const running = live.totals ? live.totals[hand] : null;
      setText(hand + "-total", settledHands ? pay[hand + "_total"] :
        running === null || running === undefined ? "" : running);
    }
    setText("round-title", pay ? `Hand ${pay.round_no} result` : "This hand");
    const result = document.getElementById("round-result");
    result.hidden = !pay;
    result.dataset.winner = pay ? (pay.void ? "void" : pay.winner) : "";
    result.dataset.round = pay ? pay.round_no : "";
    result.textContent = !pay ? "" : pay.void ? `VOID \u2013 ${pay.reason || "round void"}: return the wagers` :
      pay.winner === "tie" ? `TIE ${pay.player_total} \u2013 ${pay.banker_total}` :
      `${pay.winner.toUpperCase()} WINS ${pay[pay.winner + "_total"]} to ` +
      `${pay[(pay.winner === "player" ? "banker" : "player") + "_total"]}`;
    const payTitle = document.getElementById("pay-title");
    payTitle.hidden = !pay;
    payTitle.textContent = !pay ? "" : `\u00b7 ${pay.void ? "void hand" : "pay hand"} ` +
      `${pay.round_no}, highest seat first`;
    const payBySeat = new Map((pay ? pay.seats : []).map((s, order) => [s.seat, {order, ...s}]));
    const collecting = live.prompt && live.prompt.action === "collect_vigorish" ?
      new Map((live.prompt.seats || []).map((s) => [s.seat, s.cents])) : new Map();

    const seatsBox = document.getElementById("seats");
    seatsBox.style.setProperty("--seat-cols", String(Math.ceil(live.seats.length / 2) || 7));
    seatsBox.replaceChildren(...live.seats.map((seat) => {
      const node = el("div", {class: "seat" + (seat.wagers.length ? " playing" : "") +
                                     (seat.progressive ? " progressive" : ""),
                              "data-seat": seat.seat},
        el("div", {class: "seat-no", text: String(seat.seat)}));
      for (const w of seat.wagers) {
        node.append(el("div", {class: "seat-wager", "data-wager": w.wager},
          el("span", {text: wagerName(w.wager)}), el("b", {text: money(w.amount_cents)})));
      }
      if (seat.progressive) {
        node.append(el("div", {class: "seat-progressive", "data-cents": seat.progressive_cents},
          el("span", {text: "Progressive"}), el("b", {text: money(seat.progressive_cents)})));
      } else if (seat.sensor) {
        node.append(el("div", {class: "seat-sensor", text: "chip on sensor"}));
      }
      if (collecting.has(seat.seat)) {
        node.append(el("div", {class: "seat-vig", "data-cents": collecting.get(seat.seat)},
          el("span", {text: "Collect commission"}), el("b", {text: money(collecting.get(seat.seat))})));
      }
      const owed = payBySeat.get(seat.seat);
      if (owed) node.append(payLines(owed, pay.void));
      if (live.award && live.award.seat === seat.seat) node.classList.add("won");
      return node;
    }));
    fitSeats();

    const light = document.getElementById("win-light");
    light.hidden = !live.award;
    if (live.award) {
      light.replaceChildren(el("b", {text: "JACKPOT"}),
        el("span", {text: `Seat ${live.award.seat} \u00b7 ${wagerName(live.award.progressive)}`}),
        el("span", {class: "amount", text: money(live.award.amount_cents)}));
    }
    setText("daemon-state", live.daemon_connected ? `${table.table_id || ""} \u00b7 ${live.state}`
                                                  : "daemon offline: showing the last known state");
  }

  Display.follow(["live"], {live: drawLive});
})();
