"""A par sheet as the technician reads it (`tablectl par-sheet`) or as JSON."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from controller.rules.par import ParSheet
from controller.rules.wager import Outcome


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:.4f}%"


def _odds_text(odds: Fraction) -> str:
    return f"{odds.numerator} to {odds.denominator}"


def render_text(sheet: ParSheet) -> str:
    g = sheet.game
    out = [f"Par sheet: {sheet.source}",
           f"  {g.family}, {g.decks} decks, variant {g.variant}; full shoe, start of round; "
           "exact enumeration", ""]
    for wp in sheet.wagers:
        title = f"{wp.name} [{wp.key}] ({wp.section})"
        if wp.paytable:
            title += f", paytable {wp.paytable}"
        out.append(title)
        # The labels' column as wide as this wager's longest (at most 40), so that a line
        # fits an 80-column terminal.
        label_width = min(40, max((len(line.label) for line in wp.lines), default=0))
        for line in wp.lines:
            odds = _odds_text(line.odds) if line.outcome is Outcome.WIN else line.outcome.value
            out.append(f"  {line.label:<{label_width}} {odds:>10}  "
                       f"p = {float(line.probability):.8f}  return {float(line.net):+.4f}")
        if wp.progressive:
            pr = wp.progressive
            out.append(f"  progressive: meter at reset ${pr.reset_cents / 100:,.2f} adds "
                       f"{_pct(pr.return_at_reset)}; each $1 more on the meter adds "
                       f"{float(pr.return_per_meter_dollar) * 100:.4g}% "
                       f"(wager {pr.wager_cents} cents)")
        if wp.mystery:
            out.append(f"  mystery bonus contribution {_pct(wp.mystery.expected_contribution)}")
        for note in wp.notes:
            out.append(f"  note: {note}")
        out.append(f"  hit frequency {_pct(wp.hit_frequency)}   house edge {_pct(wp.house_edge)}")
        out.append("")
    for reason in sheet.missing:
        out.append(f"not analysed: {reason}")
    return "\n".join(out)


def to_json_obj(sheet: ParSheet) -> dict[str, Any]:
    def frac(x: Fraction) -> dict[str, Any]:
        return {"exact": f"{x.numerator}/{x.denominator}", "decimal": float(x)}

    g = sheet.game
    return {
        "source": sheet.source,
        "game": {"family": g.family, "decks": g.decks, "variant": g.variant},
        "wagers": [
            {
                "key": wp.key, "name": wp.name, "section": wp.section, "paytable": wp.paytable,
                "lines": [{"label": line.label, "outcome": line.outcome.value,
                           "odds": _odds_text(line.odds) if line.outcome is Outcome.WIN
                           else None,
                           "probability": frac(line.probability), "net": frac(line.net),
                           "section": line.section} for line in wp.lines],
                "hit_frequency": frac(wp.hit_frequency),
                "house_edge": frac(wp.house_edge),
                "progressive": None if wp.progressive is None else {
                    "reset_cents": wp.progressive.reset_cents,
                    "return_at_reset": frac(wp.progressive.return_at_reset),
                    "return_per_meter_dollar": frac(wp.progressive.return_per_meter_dollar),
                    "wager_cents": wp.progressive.wager_cents, "note": wp.progressive.note},
                "mystery": None if wp.mystery is None else {
                    "expected_contribution": frac(wp.mystery.expected_contribution),
                    "note": wp.mystery.note},
                "notes": list(wp.notes),
            }
            for wp in sheet.wagers
        ],
        "missing": list(sheet.missing),
    }
