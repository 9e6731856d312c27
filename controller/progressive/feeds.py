"""The progressive system's feeds over MQTT: every meter for the table's displays, and the
table's status for the pit page (`controller.progressive.pit_feed`). One owner of the
publisher; none of this is the ledger, so nothing here can change money."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from controller.progressive.config import ProgressiveConfig
from controller.progressive.ledger import METER_EVENT, MeterLedger
from controller.progressive.linked import LinkedLedger
from controller.progressive.mqtt import MeterPublisher, meter_message
from controller.progressive.pit_feed import FEED_INTERVAL_S, PitFeed
from controller.memory.store import Event, Store


class ProgressiveFeeds:
    def __init__(self, config: ProgressiveConfig, store: Store, ledger: MeterLedger,
                 publisher: MeterPublisher | None, linked: LinkedLedger | None) -> None:
        self.config = config
        self.store = store
        self.ledger = ledger
        self.publisher = publisher
        self.linked = linked
        self._published_linked: dict[tuple[str, str], int] = {}
        self._connections_seen = 0
        mqtt = config.mqtt
        self.pit: PitFeed | None = None
        # The pit page's local amounts, kept from the meter events this listener is given
        # (a meter changes only with one): the feed's look every FEED_INTERVAL_S reads no store.
        self._amounts: dict[tuple[str, str], int] = {}
        if publisher is not None and mqtt is not None:
            self.pit = PitFeed(publisher.publish, mqtt.prefix, mqtt.site, config.table_id,
                               store._clock)
            self._amounts = {(m.progressive, m.level): m.amount_cents
                             for m in ledger.all_meters()}
        self._unsubscribe = store.subscribe(self._on_event) if publisher else None

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.publisher is not None:
            self.publisher.close()

    def _on_event(self, event: Event) -> None:
        """Store listener: only committed meter changes and results reach the feeds."""
        if self.pit is not None:
            self.pit.on_event(event)
        if event.kind != METER_EVENT or self.publisher is None or self.config.mqtt is None:
            return
        p = event.payload
        self._amounts[(p["progressive"], p["level"])] = p["amount_cents"]
        mqtt = self.config.mqtt
        self.publisher.publish(meter_message(mqtt.prefix, mqtt.site, self.config.table_id,
                                             p["progressive"], p["level"], p["amount_cents"],
                                             p["version"], event.at))

    def publish_linked(self) -> None:
        """The shared meters as last read, each once per version."""
        if self.publisher is None or self.config.mqtt is None or self.linked is None:
            return
        mqtt = self.config.mqtt
        for key, level in self.linked.levels_cache.items():
            if self._published_linked.get(key) == level.version:
                continue
            self._published_linked[key] = level.version
            self.publisher.publish(meter_message(
                mqtt.prefix, mqtt.site, self.config.table_id, level.progressive, level.level,
                level.amount_cents, level.version, self.store._clock(), linked=True))

    def publish_all(self) -> None:
        """Republish every meter (start-up, a broker back): the retained messages then show
        the current amounts."""
        if self.publisher is None or self.config.mqtt is None:
            return
        mqtt = self.config.mqtt
        for row in self.ledger.all_meters():
            self.publisher.publish(meter_message(mqtt.prefix, mqtt.site, self.config.table_id,
                                                 row.progressive, row.level, row.amount_cents,
                                                 row.version, self.store._clock()))
        self._published_linked.clear()
        self.publish_linked()

    def pit_meters(self) -> list[dict[str, Any]]:
        """Each meter as the pit page shows it (`pit_feed.status_payload`), from memory: a
        local one as its last committed change left it, a linked one as last read from the
        shared ledger (stale while the link is down), as `meters_view.meter_entries` has them."""
        meters = []
        for spec in self.config.progressives:
            for level in spec.levels:
                key = (spec.name, level.level)
                amount, stale = self._amounts.get(key), False
                if amount is None and self.linked is not None:
                    shared = self.linked.levels_cache.get(key)
                    amount = shared.amount_cents if shared is not None else None
                    stale = self.linked.down_reason is not None
                meters.append({"progressive": spec.name, "level": level.level,
                               "linked": spec.linked, "amount_cents": amount, "stale": stale})
        return meters

    def update_pit(self, status: Mapping[str, Any], link: Mapping[str, str | None]) -> bool:
        """The pit page's status, sent when it changed; everything again after a reconnect
        (a broker restarted without persistence has forgotten the retained messages)."""
        if self.pit is None or self.publisher is None:
            return False
        connections = self.publisher.connections
        if connections != self._connections_seen:
            self._connections_seen = connections
            self.pit.republish()
            self.publish_all()
        return self.pit.update(status, self.pit_meters(), link)

    async def follow_pit(self, status: Callable[[], Mapping[str, Any]],
                         link: Callable[[], Mapping[str, str | None]]) -> None:
        """Forever: the status sent whenever it changed (a look every FEED_INTERVAL_S)."""
        while True:
            self.update_pit(status(), link())
            await asyncio.sleep(FEED_INTERVAL_S)
