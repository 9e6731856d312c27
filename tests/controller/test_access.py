"""Who may do what on the control socket: roles from peer credentials, enforced per command,
and no command that lets a client assert a device fact (681a.3(b) batch check)."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from controller.access import AccessConfig, AccessPolicy, Caller, Role, peer_credentials, \
    peer_groups
from controller.control import ControlClient, ControlError
from controller.daemon import Daemon
from tests.controller.test_daemon import StandInDevice, config_for, running

GIDS = {"tabled": 5001, "tabled-dealer": 5002, "tabled-tech": 5003}
OWN_UID, STRANGER = 999, 2001
READ, DEALER, TECHNICIAN, SUPERVISOR = Role
EVERY_ROLE = frozenset(Role)


def policy(**settings) -> AccessPolicy:  # noqa: ANN003
    return AccessPolicy(AccessConfig(**settings), own_uid=OWN_UID, gid_of=GIDS.get)


@pytest.mark.parametrize(("uid", "groups", "roles"), [
    (0, [], EVERY_ROLE),  # root
    (OWN_UID, [], EVERY_ROLE),  # the daemon's own user
    (STRANGER, [], frozenset()),  # reached the socket somehow, holds no role
    (STRANGER, [100, 5001], {READ}),  # group tabled: look only
    (STRANGER, [5002], {READ, DEALER, SUPERVISOR}),  # dealer: supervisor commands with a PIN
    (STRANGER, [5003], {READ, TECHNICIAN}),  # technician: diagnostics, never wagers
    (STRANGER, [5002, 5003], {READ, DEALER, SUPERVISOR, TECHNICIAN}),
])
def test_roles_come_from_the_callers_groups(uid, groups, roles):
    assert policy().roles_for(uid, groups) == roles


def test_configured_group_names_and_trusted_uids():
    renamed = policy(dealer_group="tabled-tech", technician_group="nosuchgroup",
                     trusted_uids=(STRANGER,))
    assert renamed.roles_for(3000, [5003]) == {READ, DEALER, SUPERVISOR}
    assert renamed.missing_groups == ["nosuchgroup"]  # nobody holds a role from it
    assert renamed.roles_for(STRANGER, []) == EVERY_ROLE


def test_the_kernel_says_who_connected():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        assert peer_credentials(ours) == (os.getpid(), os.geteuid(), os.getegid())
        assert set(peer_groups(ours)) == set(os.getgroups())
        caller = AccessPolicy(AccessConfig(), gid_of=GIDS.get).caller(ours)
    assert (caller.uid, caller.pid, caller.roles) == (os.geteuid(), os.getpid(), EVERY_ROLE)


# --- enforced on the daemon's own commands ------------------------------------------------

EXPECTED_ROLES = {
    "status": READ, "devices": READ, "rounds": READ, "events": READ, "seat_totals": READ,
    "verify_chain": READ, "meters": READ, "awards": READ, "subscribe": READ,
    "open": DEALER, "shuffle": DEALER, "shoe_loaded": DEALER, "place_wager": DEALER,
    "no_more_bets": DEALER, "seat_leaves": DEALER, "new_dealer": DEALER,
    "self_test": TECHNICIAN, "light_test": TECHNICIAN,
    "acknowledge_fault": SUPERVISOR, "adjust_meter": SUPERVISOR, "validate_award": SUPERVISOR,
}


class Callers:
    """Stands in for the kernel's answer (the mapping itself is the real policy's)."""

    def __init__(self, daemon: Daemon) -> None:
        self.policy = policy()
        self.groups: list[int] = [GIDS["tabled"]]
        daemon.control.identify = self.identify

    def identify(self, writer: asyncio.StreamWriter) -> Caller:
        return Caller(STRANGER, STRANGER, 4242, self.policy.roles_for(STRANGER, self.groups))


def test_every_command_declares_the_role_expected():
    daemon = Daemon(config_for_dir())
    try:
        assert {name: c.role for name, c in daemon.control.commands.items()} == EXPECTED_ROLES
    finally:
        daemon.store.close()


def config_for_dir():  # noqa: ANN201
    import tempfile
    from pathlib import Path

    return config_for(Path(tempfile.mkdtemp(prefix="access-")))


ARGS = {"place_wager": {"seat": 1, "wager": "banker", "amount_cents": 500},
        "seat_leaves": {"seat": 1}, "shuffle": {"back": "red"}, "self_test": {"device": "shoe"},
        "adjust_meter": {"progressive": "p", "level": "l", "delta_cents": 1, "reason": "x"},
        "validate_award": {"award_id": 1}}


async def test_a_read_only_caller_cannot_change_anything(tmp_path):
    holder: list[Callers] = []
    async with running(config_for(tmp_path), prepare=lambda d: holder.append(Callers(d))) \
            as client:
        before = await client.call("events", limit=100_000)
        refused = []
        for name, role in sorted(EXPECTED_ROLES.items()):
            if role is READ:
                continue
            with pytest.raises(ControlError) as caught:
                await client.call(name, auth={"supervisor": "floor", "pin": "2468"},
                                  **ARGS.get(name, {}))
            assert caught.value.code == "forbidden", name
            assert str(caught.value).startswith(f"{name} needs the {role.value} role; this "
                                                f"caller (uid {STRANGER}) has read")
            refused.append(name)
        assert (await client.call("status"))["state"] == "closed"
        assert (await client.call("verify_chain"))["entries"] >= len(before)
        after = await client.call("events", limit=100_000)
    new = after[len(before):]
    # nothing happened but the refusals, each logged as refused (never as done)
    assert [(e["kind"], e["payload"]["command"]) for e in new] == [
        ("command_refused", name) for name in refused]
    assert all(e["payload"]["caller"]["uid"] == STRANGER for e in new)


async def test_a_dealer_cannot_run_supervisor_or_technician_commands(tmp_path):
    holder: list[Callers] = []
    async with running(config_for(tmp_path), prepare=lambda d: holder.append(Callers(d))) \
            as client:
        holder[0].groups = [GIDS["tabled-dealer"]]
        for name in ("self_test", "light_test"):
            with pytest.raises(ControlError) as caught:
                await client.call(name, **ARGS.get(name, {}))
            assert caught.value.code == "forbidden"
        for name in ("acknowledge_fault", "adjust_meter", "validate_award"):
            with pytest.raises(ControlError, match=f"{name} needs a floor supervisor's name "
                                                   "and PIN") as caught:
                await client.call(name, **ARGS.get(name, {}))
            assert caught.value.code == "unauthorised"
        assert (await client.call("open"))["state"] == "opening"  # a dealer's own work
        kinds = [(e["kind"], e["payload"].get("command"))
                 for e in await client.call("events", limit=100_000)
                 if e["kind"] in ("command_refused", "supervisor_command")]
    assert kinds == [("command_refused", n) for n in (
        "self_test", "light_test", "acknowledge_fault", "adjust_meter", "validate_award")]


# --- device facts ---------------------------------------------------------------------------

async def test_no_caller_can_assert_a_device_fact_681a_3_b(tmp_path):
    """The shuffler verified the BLUE batch; the dealer says the shoe is loaded; RED cards
    come out. Before: 3 rounds were dealt without a fault. Now the dealer's word carries the
    verified batch, and the first red card stops the table as the shoe's own report would."""
    from cards import BackColour, Card
    from drivers.protocols import CardDrawn

    shoe = StandInDevice("shoe")
    async with running(config_for(tmp_path), {"shoe": shoe}) as client:  # root: every role
        await client.call("open")
        await client.call("shuffle", back="blue")  # no shuffler configured: by hand
        await settle(client, "cut")
        loaded = await client.call("shoe_loaded")
        assert (loaded["state"], loaded["batches"]["in_play"]) == ("burn", "blue")
        shoe.emit(CardDrawn("shoe", 0, Card.parse("5♣"), BackColour.RED, False))
        status = await settle(client, "device_fault")
        assert (status["fault"]["device"], status["fault"]["code"]) == ("shoe", "batch_mismatch")
        assert "card 0 has a RED back; the batch in play is BLUE" in status["fault"]["detail"]


async def test_a_dealer_naming_another_batch_meets_the_same_check_681a_3_b(tmp_path):
    async with running(config_for(tmp_path)) as client:
        await client.call("open")
        await client.call("shuffle", back="blue")
        await settle(client, "cut")
        status = await client.call("shoe_loaded", back="red")
        assert status["state"] == "device_fault"
        assert status["fault"]["code"] == "batch_mismatch"
        assert status["fault"]["detail"] == ("the shoe was loaded with the RED batch; the batch "
                                             "shuffled and verified is BLUE")
        with pytest.raises(ControlError) as caught:
            await client.call("shoe_loaded", back="purple")
        assert (caught.value.code, str(caught.value)) == (
            "bad_request", "'back' = 'purple': allowed: red, blue, green, black")


async def settle(client: ControlClient, state: str) -> dict:
    for _ in range(500):
        status = await client.call("status")
        if status["state"] == state:
            return status
        await asyncio.sleep(0.01)
    raise AssertionError(f"table never reached {state}: {status['state']}")
