"""Who may do what on the control socket: roles from peer credentials, enforced per command,
and no command that lets a client assert a device fact (681a.3(b) batch check)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import time

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
        raw = ours.getsockopt(socket.SOL_SOCKET, 59, 1024)  # SO_PEERGROUPS, not a fallback
        assert set(peer_groups(ours)) == set(os.getgroups()) == {
            g for (g,) in struct.iter_unpack("I", raw)}
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
    "disclosed_player_third": SUPERVISOR,  # 631a.15(c): a floor ruling (docs/rulings.md C20)
    # A change of software is the floor's consent; staging only installs (docs/rulings.md).
    "software_change": SUPERVISOR, "software_record": TECHNICIAN,
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


async def test_a_lockout_survives_a_restart_of_the_daemon(tmp_path):
    """Two wrong PINs lock the supervisor 'floor' out (pin_lockout_after = 2); the daemon
    restarts (a power cycle would do the same) and still refuses her right PIN, with the
    resumed lockout in the log: restarting the table gives a guesser no fresh attempts."""
    from controller.config import load_config
    from tests.controller.test_daemon import CONFIG

    config = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                  f"control.socket={tmp_path / 'control.sock'}",
                                  "access.pin_lockout_after=2", "access.pin_delay_s=0"])

    def as_dealer(daemon: Daemon) -> None:
        Callers(daemon).groups = [GIDS["tabled-dealer"]]

    async with running(config, prepare=as_dealer) as client:
        for pin in ("1111", "2222"):
            with pytest.raises(ControlError, match="'floor' and that PIN were not accepted"):
                await client.call("acknowledge_fault", auth={"supervisor": "floor", "pin": pin})
    async with running(config, prepare=as_dealer) as client:
        with pytest.raises(ControlError, match=r"'floor' is locked out for \d+ more s after 2 "
                                               "wrong PINs") as refused:
            await client.call("acknowledge_fault", auth={"supervisor": "floor", "pin": "2468"})
        resumed = [e["payload"] for e in await client.call("events", kind="pin_guard_resumed")]
    left = int(str(refused.value).split("locked out for ")[1].split()[0])
    assert 840 <= left <= 900  # 900 s from the lockout, less the restart (a busy machine's)
    assert resumed == [{"supervisors": {"floor": {
        "failures": 0, "locked_for_s": resumed[0]["supervisors"]["floor"]["locked_for_s"]}}}]
    assert left <= resumed[0]["supervisors"]["floor"]["locked_for_s"] <= 900


@pytest.mark.parametrize("clock_moved_s", [3_600.0, -3_600.0])
async def test_a_wall_clock_moved_across_restarts_lifts_no_lockout(tmp_path, monkeypatch,
                                                                   clock_moved_s):
    """A Pi has no real-time clock: a spoofed time server or a pulled plug moves its wall
    clock. Two wrong PINs lock 'floor' out (pin_lockout_after = 3 here, the third is the
    lockout); one wrong PIN for 'pit'; the daemon restarts with the wall clock an hour
    forward (or back): 'floor' is still locked out for the lockout's whole time and 'pit''s
    wrong PIN still counts (two more lock her out)."""
    from controller.config import load_config
    from tests.controller.test_daemon import CONFIG

    config = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                  f"control.socket={tmp_path / 'control.sock'}",
                                  "access.pin_lockout_after=3", "access.pin_delay_s=0"])

    def as_dealer(daemon: Daemon) -> None:
        Callers(daemon).groups = [GIDS["tabled-dealer"]]

    async def wrong(client, name: str) -> str:  # noqa: ANN001
        with pytest.raises(ControlError) as refused:
            await client.call("acknowledge_fault", auth={"supervisor": name, "pin": "0000"})
        return str(refused.value)

    async with running(config, prepare=as_dealer) as client:
        for _ in range(3):
            await wrong(client, "floor")
        await wrong(client, "pit")
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + clock_moved_s)
    async with running(config, prepare=as_dealer) as client:
        refused = await wrong(client, "floor")
        assert "'floor' is locked out for" in refused
        left = int(refused.split("locked out for ")[1].split()[0])
        assert 850 <= left <= 900  # the whole 900 s, less this test's own run on a busy machine
        assert await wrong(client, "pit") == ("acknowledge_fault needs a floor supervisor's name and "
                                              "PIN: supervisor 'pit' and that PIN were not accepted")
        await wrong(client, "pit")  # her third: the lockout
        refused = await wrong(client, "pit")
        assert "'pit' is locked out for" in refused
        left = int(refused.split("locked out for ")[1].split()[0])
        assert 850 <= left <= 900  # the whole 900 s from her third, less the time since


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


# --- the kernel's word, end to end (needs root to become another user) ---------------------

CHILD = """
import json, os, socket, sys
path, uid, groups = sys.argv[1], int(sys.argv[2]), [int(g) for g in sys.argv[3].split(",")]
os.setgroups(groups); os.setgid(groups[0]); os.setuid(uid)  # credentials as at connect()
sock = socket.socket(socket.AF_UNIX); sock.connect(path)
answers = []
for cmd in ("status", "open"):
    sock.sendall(json.dumps({"cmd": cmd}).encode() + b"\\n")
    answers.append(json.loads(sock.makefile().readline()))
print(json.dumps(answers))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user needs root; the "
                    "mapping itself is tested above with the policy's own code")
@pytest.mark.parametrize(("groups", "open_answer"), [
    ("5001", {"ok": False, "code": "forbidden",
              "error": "open needs the dealer role; this caller (uid 65534) has read "
                       "(docs/deployment.md, groups)"}),
    ("5001,5002", {"ok": True, "result": "opened"}),
])
async def test_another_users_roles_come_from_the_kernel(groups, open_answer):
    import sys
    import tempfile

    from controller.control import ControlServer

    directory = tempfile.mkdtemp(prefix="access-")
    os.chmod(directory, 0o755)
    server = ControlServer(f"{directory}/c.sock", mode=0o666, access=policy())
    server.register("status", lambda args: "closed", role=READ)
    server.register("open", lambda args: "opened", role=DEALER)
    await server.start()
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, server.path, "65534", groups,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(child.communicate(), 60)
    finally:
        await server.close()
    status, opened = json.loads(out or b"null") or [None, None]
    assert status == {"id": None, "ok": True, "result": "closed"}, err
    assert {k: v for k, v in opened.items() if k != "id"} == open_answer


# --- where PIN hashes may live --------------------------------------------------------------

def _without_inline_opt_in(tmp_path, mode: int):  # noqa: ANN001, ANN202
    from pathlib import Path

    source = Path(__file__).parents[2] / "config" / "simulated-table.toml"
    text = source.read_text().replace("inline_pin_hashes = true\n", "")
    path = tmp_path / "table.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_pin_hashes_in_a_group_readable_configuration_are_refused(tmp_path):
    from controller.config import ConfigError, load_config

    path = _without_inline_opt_in(tmp_path, 0o640)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.problems == [
        "supervisors: PIN hashes in a file group or others can read (mode 0640) can be "
        "guessed offline; allowed: [access] secrets = a file of mode 0600 holding "
        "[supervisors] (docs/deployment.md), or inline_pin_hashes = true on a demo table"]
    path.chmod(0o600)  # the service user's alone: acceptable
    assert list(load_config(path).supervisor_pin_hashes) == ["floor"]


def test_pin_hashes_come_from_the_secrets_file(tmp_path):
    from controller.auth import hash_pin
    from controller.config import ConfigError, load_config

    path = _without_inline_opt_in(tmp_path, 0o640)
    text = path.read_text()
    start = text.index("[supervisors]")
    path.write_text(text[:start] + text[start:].split("\n\n", 1)[-1] if "\n\n" in
                    text[start:] else text[:start])
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[supervisors]\nana = "{hash_pin("4321", iterations=100_000)}"\n')
    secrets.chmod(0o600)
    config = load_config(path, [f"access.secrets={secrets}"])
    assert list(config.supervisor_pin_hashes) == ["ana"]
    secrets.chmod(0o644)
    with pytest.raises(ConfigError, match="has mode 0644: group or others can read it"):
        load_config(path, [f"access.secrets={secrets}"])


def test_bad_access_settings_are_named_with_what_is_allowed():
    from controller.access import parse_access

    problems: list[str] = []
    config = parse_access({"max_connections": 0, "pin_delay_s": True, "groups": "x",
                           "trusted_uids": [1000, -1], "dealer_group": " ",
                           "pin_lockout_after": 50}, problems)
    assert problems == [
        "access.max_connections = 0: not allowed; allowed: a whole number 1 to 60000",
        "access.pin_delay_s = True: not allowed; allowed: seconds, 0 to 60",
        "access.groups: unknown key; allowed keys: dealer_group, idle_timeout_s, "
        "inline_pin_hashes, max_connections, max_connections_per_user, pin_delay_s, "
        "pin_lockout_after, pin_lockout_s, pin_max_delay_s, read_group, secrets, "
        "subscriber_stall_s, technician_group, trusted_uids",
        "access.trusted_uids = [1000, -1]: not allowed; allowed: a list of user ids "
        "(whole numbers >= 0)",
        "access.dealer_group = ' ': not allowed; allowed: a group name, e.g. 'tabled-dealer'"]
    assert config.pin_lockout_after == 50 and config.max_connections == 4096
