// The scoreboard's words in each language it may show ([display_service] languages,
// controller/display/settings.py LANGUAGES). The first configured language is the main
// label, the second is shown beside it, as the pit's bilingual boards do.
"use strict";

const Labels = (() => {
  const WORDS = {
    en: {
      table: "Table", dealer: "Dealer", shoe: "Shoe", hand: "Hand", round: "Round",
      banker: "Banker", player: "Player", tie: "Tie", banker_pair: "B Pair",
      player_pair: "P Pair", hands: "Hands", naturals: "Naturals", streak: "Streak",
      longest: "Longest", big_road: "Big Road", bead_plate: "Bead Plate",
      big_eye_boy: "Big Eye Boy", small_road: "Small Road", cockroach_pig: "Cockroach Pig",
      next_hand: "Next hand", limits: "Limits", last_result: "Last hand",
      this_shoe: "This shoe", progressives: "Progressives", hands_this_shoe: "Hands this shoe",
      last_hand: "LAST HAND", open: "PLACE YOUR BETS", closed: "NO MORE BETS",
      paused: "TABLE PAUSED", offline: "TABLE OFFLINE", shuffle: "SHUFFLE",
      table_closed: "TABLE CLOSED", wins: "WINS", short_banker: "B", short_player: "P",
      short_tie: "T",
    },
    "zh-hans": {
      table: "台", dealer: "荷官", shoe: "靴", hand: "局", round: "轮",
      banker: "庄", player: "闲", tie: "和", banker_pair: "庄对", player_pair: "闲对",
      hands: "局数", naturals: "例牌", streak: "连胜", longest: "最长",
      big_road: "大路", bead_plate: "珠盘路", big_eye_boy: "大眼仔", small_road: "小路",
      cockroach_pig: "曱甴路", next_hand: "问路", limits: "限红", last_result: "上局",
      this_shoe: "本靴", progressives: "累积奖", hands_this_shoe: "本靴各局",
      last_hand: "最后一局", open: "请下注", closed: "停止下注", paused: "暂停",
      offline: "离线", shuffle: "洗牌", table_closed: "休息", wins: "胜",
      short_banker: "庄", short_player: "闲", short_tie: "和",
    },
  };
  // Traditional characters where they differ from the simplified ones.
  WORDS["zh-hant"] = {
    ...WORDS["zh-hans"],
    round: "輪", banker: "莊", player: "閒", banker_pair: "莊對", player_pair: "閒對",
    hands: "局數", streak: "連勝", longest: "最長", bead_plate: "珠盤路", next_hand: "問路",
    limits: "限紅", progressives: "累積獎", last_hand: "最後一局", open: "請下注",
    paused: "暫停", offline: "離線", short_banker: "莊", short_player: "閒",
  };
  const LANG_TAGS = {en: "en", "zh-hans": "zh-Hans", "zh-hant": "zh-Hant"};
  let languages = ["en"];

  function word(lang, key) {
    const words = WORDS[lang] || WORDS.en;
    return key in words ? words[key] : (WORDS.en[key] || key);
  }

  // The language's tag for an element's lang attribute (the browser picks the glyphs by it).
  function tag(lang) { return LANG_TAGS[lang] || lang; }

  // A text in the main language with the second one beside it: one node per language,
  // each tagged with its language, its text textOf(lang).
  function spans(textOf) {
    return languages.map((lang, i) => {
      const span = document.createElement("span");
      span.className = i === 0 ? "lang main" : "lang alt";
      span.lang = tag(lang);
      span.textContent = textOf(lang);
      return span;
    });
  }

  // A label in each language (spans).
  function nodes(key) { return spans((lang) => word(lang, key)); }

  function fill(node, key) {
    if (node.dataset.labelShown === key + "/" + languages.join(",")) return;
    node.replaceChildren(...nodes(key));
    node.dataset.labelShown = key + "/" + languages.join(",");
  }

  // Whether this screen's computer has a font for the language's characters: a character
  // no font has is drawn as the same empty box as a code point no font can have. Without
  // one the language's labels stay in the page but are not shown (boxes help no one), and
  // the footer says which font package to install (docs/display.md).
  const drawable = {};
  function canDraw(lang) {
    if (lang === "en") return true;
    if (!(lang in drawable)) {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 48;
      const ctx = canvas.getContext("2d");
      const pixels = (text) => {
        ctx.clearRect(0, 0, 48, 48);
        ctx.font = "40px sans-serif";
        ctx.fillText(text, 2, 40);
        return ctx.getImageData(0, 0, 48, 48).data.join(",");
      };
      drawable[lang] = pixels(word(lang, "banker")) !== pixels("\u{10FFFD}");
    }
    return drawable[lang];
  }

  // The configured languages; every [data-label] on the page is filled in again.
  function use(configured) {
    languages = (configured && configured.length ? configured : ["en"]).filter((l) => l in WORDS);
    if (!languages.length) languages = ["en"];
    const missing = languages.filter((l) => !canDraw(l));
    document.body.classList.toggle("no-cjk", missing.length > 0);
    const note = document.getElementById("font-note");
    if (note) {
      note.hidden = !missing.length;
      note.textContent = missing.length ? `no font for ${missing.join(", ")} on this screen's ` +
        "computer: install fonts-noto-cjk (docs/display.md)" : "";
    }
    for (const node of document.querySelectorAll("[data-label]")) fill(node, node.dataset.label);
    for (const node of document.querySelectorAll("[data-label-short]")) {
      fill(node, "short_" + node.dataset.labelShort);
    }
  }

  function main(key) { return word(shown()[0], key); }

  // The languages this screen can show, the main one first.
  function shown() {
    const ok = languages.filter(canDraw);
    return ok.length ? ok : ["en"];
  }

  return {use, fill, nodes, spans, tag, main, word, shown,
          get languages() { return languages.slice(); }};
})();
