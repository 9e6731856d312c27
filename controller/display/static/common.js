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
  // `onMessage(topic, text)` gets each message's text as it arrives.
  function open(topics, onMessage) {
    let source = null;
    const banner = document.getElementById("connection");
    function status(text, ok) {
      if (!banner) return;
      banner.textContent = text;
      banner.dataset.ok = ok ? "1" : "0";
      document.body.classList.toggle("offline", !ok);
    }
    function start() {
      source = new EventSource("/events?topics=" + topics.join(","));
      source.onopen = () => status("live", true);
      source.onerror = () => {
        status("reconnecting to the display service\u2026", false);
        if (source.readyState === EventSource.CLOSED) setTimeout(start, 1000);
      };
      for (const topic of topics) {
        source.addEventListener(topic, (message) => onMessage(topic, message.data));
      }
    }
    start();
  }

  // Every message, in order, to its topic's handler: for a stream whose messages are
  // changes (the pit's tables), each of which must be applied.
  function connect(topics, handlers) {
    open(topics, (topic, text) => handlers[topic](JSON.parse(text)));
  }

  // For a stream whose every message is the whole of its topic's view (the scoreboard's
  // and the dealer's, controller/display/service.py): only the newest of each topic is
  // drawn, once per frame. A page that cannot draw as fast as the table changes (a slow
  // screen, the burst after a reconnect, a table dealt faster than by hand) then skips
  // to the present. Drawing each message in turn, it fell further behind with every
  // round: 500 ms behind a table dealing a round every 35 ms, after ten rounds.
  function follow(topics, draws) {
    const newest = new Map();  // topic -> the text of its newest message not yet drawn
    function drawNewest() {
      const due = [...newest];
      newest.clear();
      for (const [topic, text] of due) draws[topic](JSON.parse(text));
    }
    open(topics, (topic, text) => {
      // A frame is asked for when the first message after a draw arrives; a hidden page
      // keeps that request (and the newest views) until it is shown.
      if (newest.size === 0) requestAnimationFrame(drawNewest);
      newest.set(topic, text);
    });
  }

  const WAGER_NAMES = {banker: "Banker", player: "Player", tie: "Tie"};
  function wagerName(key) {
    return WAGER_NAMES[key] || key.replace(/_/g, " ").replace(/\b\w/g, (c) => c.toUpperCase());
  }

  return {money, shortMoney, el, cardFace, setText, connect, follow, wagerName};
})();
