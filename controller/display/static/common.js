// Shared by the scoreboard and the dealer's page: the live connection and small helpers.
// Everything is served by the display service itself (no CDN, no web fonts).
"use strict";

const Display = (() => {
  const SUITS_RED = new Set(["\u2665", "\u2666"]);

  function money(cents) {
    if (cents === null || cents === undefined) return "\u2013";
    const whole = Math.floor(Math.abs(cents) / 100).toLocaleString("en-US");
    const frac = String(Math.abs(cents) % 100).padStart(2, "0");
    return (cents < 0 ? "-$" : "$") + whole + "." + frac;
  }

  function shortMoney(cents) {
    if (cents === null || cents === undefined) return "\u2013";
    const dollars = cents / 100;
    if (dollars >= 1000 && dollars % 1000 === 0) return "$" + (dollars / 1000) + "K";
    return "$" + dollars.toLocaleString("en-US");
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function cardFace(card) {
    const suit = card.slice(-1);
    return el("span", {class: "card" + (SUITS_RED.has(suit) ? " red" : ""), "data-card": card},
      el("span", {class: "rank", text: card.slice(0, -1)}),
      el("span", {class: "suit", text: suit}));
  }

  function setText(id, text) {
    const node = document.getElementById(id);
    if (node && node.textContent !== String(text)) node.textContent = String(text);
  }

  // The live connection: server-sent events, one event type per part of the view.
  // EventSource reconnects by itself after a dropped connection; if the browser gives up
  // (the service answered with an error while restarting) we open a new one.
  function connect(topics, handlers) {
    let source = null;
    const banner = document.getElementById("connection");
    function status(text, ok) {
      if (!banner) return;
      banner.textContent = text;
      banner.dataset.ok = ok ? "1" : "0";
      document.body.classList.toggle("offline", !ok);
    }
    function open() {
      source = new EventSource("/events?topics=" + topics.join(","));
      source.onopen = () => status("live", true);
      source.onerror = () => {
        status("reconnecting to the display service\u2026", false);
        if (source.readyState === EventSource.CLOSED) setTimeout(open, 1000);
      };
      for (const topic of topics) {
        source.addEventListener(topic, (message) => {
          handlers[topic](JSON.parse(message.data));
        });
      }
    }
    open();
  }

  const WAGER_NAMES = {banker: "Banker", player: "Player", tie: "Tie"};
  function wagerName(key) {
    return WAGER_NAMES[key] || key.replace(/_/g, " ").replace(/\b\w/g, (c) => c.toUpperCase());
  }

  return {money, shortMoney, el, cardFace, setText, connect, wagerName};
})();
