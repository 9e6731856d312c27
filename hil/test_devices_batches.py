"""Two-batch alternation (681a.3(b)) across the real drivers and both simulators: the shoe's
reported back colour is checked against the batch in play, the shuffler's against the one it holds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from cards import BackColour
from controller.rules.batches import BatchTracker
from drivers.protocols import BatchHeld, CardDrawn, LinkChanged, LinkState, ShoeLoaded, ShuffleComplete
from drivers.shoe import SerialShoe
from drivers.shuffler import UsbShuffler
from hil.conftest import EVENT_TIMEOUT_S, FAST_RECONNECT, ShoeBench, ShufflerBench, new_stack
from hil.recorder import Recorder

pytestmark = [pytest.mark.hil, pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]

RED, BLUE = BackColour.RED, BackColour.BLUE


def is_up(device: str) -> Callable[[LinkChanged], bool]:
    return lambda event: event.device == device and event.state is LinkState.UP


@pytest.fixture
async def table(shoe_bench: ShoeBench, shuffler_bench: ShufflerBench,
                recorder: Recorder) -> AsyncIterator[tuple[SerialShoe, UsbShuffler]]:
    shoe = SerialShoe("shoe", shoe_bench.url, reconnect=FAST_RECONNECT)
    shuffler = UsbShuffler("shuffler", shuffler_bench.vendor_id, shuffler_bench.product_id,
                           backend=shuffler_bench.backend, reconnect=FAST_RECONNECT)
    await shoe.start(recorder)
    await shuffler.start(recorder)
    for device in ("shoe", "shuffler"):
        await recorder.wait_for(LinkChanged, is_up(device), timeout=EVENT_TIMEOUT_S)
    if shoe_bench.sim is not None:
        await shoe_bench.sim.wait_host(EVENT_TIMEOUT_S)
    yield shoe, shuffler
    await shuffler.stop()
    await shoe.stop()


async def test_681a_3_b_batches_alternate_and_the_shoe_back_must_match_the_batch_in_play(
        table: tuple[SerialShoe, UsbShuffler], shoe_bench: ShoeBench,
        shuffler_bench: ShufflerBench, recorder: Recorder, sim_only: None) -> None:
    shoe_sim, shuffler_sim = shoe_bench.simulator, shuffler_bench.simulator
    shoe, shuffler = table
    tracker = BatchTracker(RED, BLUE)
    # Start of the day: RED was shuffled and is in the shoe; BLUE is in the shuffler.
    assert tracker.shuffler_loaded(RED) is None
    assert tracker.shuffle_complete(RED, verified=True) is None
    stack, cover = new_stack(seed=1, decks=1)
    shoe_sim.load(stack, RED, cover)
    loaded = await recorder.wait_for(ShoeLoaded)
    assert tracker.shoe_loaded(loaded.back) is None
    assert tracker.shuffler_loaded(BLUE) is None
    held = await recorder.wait_for(BatchHeld, lambda e: e.back is not None)
    assert tracker.shuffler_reports(held.back) is None

    # 681a.3(b)(3): BLUE is shuffled while RED is dealt.
    await shuffler.shuffle(BLUE, 52)
    await shoe_sim.draw()
    card = await recorder.wait_for(CardDrawn)
    assert tracker.card_drawn(card.back) is None
    done = await recorder.wait_for(ShuffleComplete)
    assert tracker.shuffle_complete(done.back, done.verified) is None

    # End of the shoe: RED is collected, BLUE goes into the shoe, RED into the shuffler.
    tracker.shoe_collected()
    shuffler_sim.remove_batch()
    await recorder.wait_for(BatchHeld, lambda e: e.back is None)
    mark = len(recorder.events)
    stack, cover = new_stack(seed=2, decks=1)
    shoe_sim.load(stack, BLUE, cover)
    assert tracker.shoe_loaded((await recorder.wait_for(ShoeLoaded, start=mark)).back) is None
    shuffler_sim.insert_batch(RED)
    assert tracker.shuffler_loaded(RED) is None
    held = await recorder.wait_for(BatchHeld, lambda e: e.back is RED)
    assert tracker.shuffler_reports(held.back) is None

    # A RED-backed card turns up in the BLUE shoe: a fault saying what was seen and expected.
    shoe_sim.load(stack, RED, cover)  # the shoe reads RED backs
    await shoe_sim.draw()
    wrong = await recorder.wait_for(CardDrawn, lambda e: e.back is RED, start=mark)
    fault = tracker.card_drawn(wrong.back)
    assert fault is not None and fault.code == "batch-back-mismatch"
    assert fault.detail == ("saw a RED-backed card left the shoe; "
                            "expected a BLUE-backed card (the batch in play)")
