"""The meters as the CLI and the displays read them: each with its 605a.7 companion
meters, a linked one as last read from the shared ledger (the pit page's few fields come
from memory instead: `ProgressiveFeeds.pit_meters`)."""

from __future__ import annotations

from typing import Any

from controller.progressive.config import ProgressiveConfig
from controller.progressive.ledger import PENDING, VALIDATED, MeterLedger
from controller.progressive.linked import LinkedLedger


def meter_entries(config: ProgressiveConfig, ledger: MeterLedger,
                  linked: LinkedLedger | None) -> list[dict[str, Any]]:
    """Every meter with its 605a.7 companions, for the CLI and the display."""
    result: list[dict[str, Any]] = []
    local = {(m.progressive, m.level): m for m in ledger.all_meters()}
    pending = ledger.awards(states=(PENDING, VALIDATED))
    for spec in config.progressives:
        for level in spec.levels:
            entry: dict[str, Any] = {
                "progressive": spec.name, "game": spec.game, "level": level.level,
                "linked": spec.linked, "reset_cents": level.reset_cents,
                "increment_percent": str(level.increment_rate * 100),
                "section": level.section,
                "pending_awards_cents": sum(a.amount_cents for a in pending
                                            if a.progressive == spec.name
                                            and a.level == level.level),
            }
            if spec.combinations and level.level in ("mega", "major", "minor"):
                entry["personal_combinations"] = {
                    seat: f"K{s1.name[0]}9{s2.name[0]}"
                    for seat, (s1, s2) in sorted(spec.combinations.items())}
            if level.trigger_bounds is not None:
                armed = ledger.armed_mystery(spec.name, level.level)
                entry["trigger_range_cents"] = list(level.trigger_bounds)
                entry["trigger_commitment"] = armed[3] if armed else None
            row = local.get((spec.name, level.level))
            if row is not None:
                entry.update({
                    "amount_cents": row.amount_cents, "sub_cent": str(row.frac),
                    "sequence": row.version, "wagers_count": row.wagers_count,
                    "wagers_cents": row.wagers_cents,
                    "contributed_cents": str(row.contributed),
                    "awards_count": row.awards_count,
                    "cumulative_paid_cents": row.paid_system_cents + row.paid_attendant_cents,
                    "awarded_cents": row.awarded_cents,
                    "paid_by_system_cents": row.paid_system_cents,
                    "paid_by_attendant_cents": row.paid_attendant_cents,
                    "reseeded_cents": str(row.reseeded),
                    "adjustments_cents": row.adjustments_cents, "stale": False,
                })
            elif linked is not None:
                shared = linked.levels_cache.get((spec.name, level.level))
                entry["stale"] = linked.down_reason is not None
                if shared is not None:
                    entry.update({
                        "amount_cents": shared.amount_cents, "sub_cent": str(shared.frac),
                        "sequence": shared.version, "awards_count": shared.awards_count,
                        "awarded_cents": shared.awarded_cents,
                        "contributed_cents": str(shared.contributed),
                    })
            result.append(entry)
    return result
