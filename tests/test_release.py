"""A release as a vendor builds it and a technician installs it (docs/deployment.md):
built twice from a clean clone at a tag with identical digests, installed offline into a
fresh virtualenv from the bundle alone, verified by `tablectl software verify`; one changed
byte then fails the verify and keeps the daemon out of order, naming the file.

The tag is made on this checkout's committed HEAD (uncommitted edits are not in a release).
The bundle is built for this machine's platform only (`--platform native`): the Pi's
platforms are the same code with other `pip download --platform` tags. Building downloads
the dependencies' wheels (PyPI or pip's configured indexes and its cache); without them the
tests skip, and fail under CI=true.

The upgrade tests then deal whole shoes on the simulated table with installed releases.
Times here: the build-and-verify tests 10 s, the upgrade and rollback test 45 s, the
previous release's store 25 s; all of it: `.venv/bin/python -m pytest tests/test_release.py`
(the `slow` marker: `-m "not slow"` leaves them out).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from controller.cli import exitcodes
from controller.control import ControlClient, ControlError
from controller.software import PACKAGES
from tools.release import ReleaseError, build, keygen

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a hang guard: ~60 s quiet, 5x on a busy machine

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
TAG = f"v{VERSION}"
SEED = "5f3a9c01"


def _absent(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires {reason}")
    pytest.skip(reason)


def _offline_env() -> dict[str, str]:
    """No pip configuration of this machine's (its find-links and extra indexes): the
    bundle alone; no bytecode written beside the verified files (the unit sets the same)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    if shutil.which("git") is None:
        _absent("git (the release is built from a clone)")
    tmp = tmp_path_factory.mktemp("release")
    repo = tmp / "repo"
    for cmd in (["git", "init", "--quiet", str(repo)],
                ["git", "-C", str(repo), "fetch", "--quiet", str(ROOT), "HEAD"],
                ["git", "-C", str(repo), "tag", TAG, "FETCH_HEAD"]):
        subprocess.run(cmd, check=True, capture_output=True)
    private, public = keygen(tmp / "key")
    builds = []
    for n in (1, 2):
        try:
            builds.append(build(repo=str(repo), tag=TAG, out=tmp / f"out{n}", key_path=private,
                                platforms=["native"], extras="", pip_args=[],
                                build_env_dir=tmp / "build-env"))
        except ReleaseError as exc:
            if "pip" in str(exc) and ("download" in str(exc) or "install" in str(exc)):
                _absent(f"the dependencies' wheels from pip's index ({str(exc)[:300]})")
            raise
    return {"tmp": tmp, "builds": builds, "bundle": tmp / "out1" / "bundle",
            "public": public, "private": private, "repo": repo}


@pytest.fixture(scope="module", autouse=True)
def later_releases(release: dict[str, object]) -> Iterator[dict[str, Future[Path | None]]]:
    """The other releases the upgrade tests install (N, one that cannot start, the previous
    release), each built once per run, in one background thread from the file's first test
    on, while the tests before them wait on pip installs and a shoe dealt (built in turn
    inside the tests they added 5 to 12 s each on a busy machine). A build's error is
    raised by the test that needs it, from `.result()`."""
    newer, broken = _bump(VERSION, 91), _bump(VERSION, 92)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="release-build") as pool:
        builds = {"newer": pool.submit(_release_of, release, newer),
                  "broken": pool.submit(_release_of, release, broken, broken=True),
                  "previous": pool.submit(_previous_release, release)}
        yield builds
        for build_future in builds.values():  # none left running into the module's teardown
            build_future.cancel()


def test_two_builds_of_a_tag_are_identical(release):
    first, second = release["builds"]
    assert first == second
    names = set(first)
    assert {f"bundle/baccarat_table_controller-{VERSION}-py3-none-any.whl",
            "bundle/requirements.lock", "bundle/manifest.json", "bundle/manifest.json.sig",
            "bundle/release-signing.pub",
            f"baccarat-table-controller-{TAG}-bundle.tar.gz"} <= names
    lock = (release["bundle"] / "requirements.lock").read_text()
    wheel_digest = first[f"bundle/baccarat_table_controller-{VERSION}-py3-none-any.whl"]
    assert f"baccarat-table-controller=={VERSION} \\\n    --hash=sha256:{wheel_digest}" in lock
    for package in ("cryptography", "pyserial", "structlog", "transitions", "gpiozero"):
        assert f"\n{package}==" in lock


def test_the_bundle_installs_offline_verifies_and_one_changed_byte_is_named(release):
    tmp, bundle = release["tmp"], release["bundle"]
    venv = tmp / "venv"
    env = _offline_env()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-compile", "--no-index", "--find-links", str(bundle),
         "-r", str(bundle / "requirements.lock")], env=env, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    for name in ("manifest.json", "manifest.json.sig"):  # docs/deployment.md, step 2
        shutil.copy(bundle / name, venv / name)
    verify = [str(venv / "bin" / "tablectl"), "software", "verify",
              "--public-key", str(release["public"]), "--seed", SEED]
    done = subprocess.run(verify, env=env, cwd=tmp, capture_output=True, text=True)
    assert done.returncode == exitcodes.OK, done.stdout + done.stderr
    assert done.stdout.endswith("VERIFIED\n")
    # The seeded HMAC, recomputed from the wheel itself: its package files in path order.
    wheel = next(bundle.glob("baccarat_table_controller-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = sorted(n for n in z.namelist() if n.split("/", 1)[0] in PACKAGES)
        expected = hmac.new(bytes.fromhex(SEED), b"".join(z.read(n) for n in names),
                            hashlib.sha256).hexdigest()
    assert f"  seeded HMAC   {expected}\n" in done.stdout
    assert f"  files         {len(names)} listed" in done.stdout

    site = next((venv / "lib").glob("python3.*/site-packages"))
    target = site / "cards" / "__init__.py"
    content = bytearray(target.read_bytes())
    assert content.startswith(b'"""') and content[3:4].isalpha()
    content[3] ^= 0x20  # one byte: its docstring's first letter, in the other case
    target.write_bytes(bytes(content))
    done = subprocess.run([*verify, "--json"], env=env, cwd=tmp, capture_output=True,
                          text=True)
    assert done.returncode == exitcodes.INTEGRITY_FAILURE, done.stderr
    result = json.loads(done.stdout)
    assert (result["verified"], result["differing"], result["missing"], result["extra"]) == (
        False, ["cards/__init__.py"], [], [])

    # The installed daemon, started as systemd would (release default: enforce), stays out
    # of order naming the file, and refuses to open.
    reason = asyncio.run(_daemon_reason(venv, tmp, release["public"], env))
    assert reason == f"software: release {TAG}: cards/__init__.py: differs from the release"


async def _daemon_reason(venv: Path, tmp: Path, public: Path, env: dict[str, str]) -> str:
    from cards import BackColour
    from hil.shoe_sim import SimulatedShoe

    shoe = SimulatedShoe([], BackColour.RED, 0)
    await shoe.start()
    try:
        return await _run_daemon(venv, tmp, public, env, shoe.port)
    finally:
        await shoe.stop()


async def _run_daemon(venv: Path, tmp: Path, public: Path, env: dict[str, str],
                      shoe_port: str) -> str:
    socket = tmp / "control.sock"
    tabled = [str(venv / "bin" / "tabled"), "--config",
              str(ROOT / "config" / "simulated-table.toml"),
              "--set", f"store.path={tmp / 'table.sqlite'}", "--set", f"control.socket={socket}",
              "--set", f"shoe.url={shoe_port}", "--set", "shuffler.enabled=false",
              "--set", "gpio.pin_factory=mock", "--set", "gpio.factory_options={}",
              "--set", f"software.public_key={public}"]
    init = subprocess.run([*tabled, "--init-store"], env=env, cwd=tmp, capture_output=True,
                          text=True)
    assert init.returncode == 0, init.stderr
    daemon = await asyncio.create_subprocess_exec(*tabled, env=env, cwd=tmp,
                                                  stdout=asyncio.subprocess.DEVNULL,
                                                  stderr=asyncio.subprocess.PIPE)
    try:
        client = None
        for _ in range(600):
            if daemon.returncode is not None:
                break
            if socket.exists():
                try:
                    client = await ControlClient(str(socket)).connect()
                    break
                except ConnectionRefusedError:  # a socket file nobody listens on (yet)
                    pass
            await asyncio.sleep(0.05)
        assert daemon.returncode is None, f"tabled exited ({daemon.returncode}) at its start"
        assert socket.exists(), "tabled did not open its control socket"
        assert client is not None, "tabled's control socket refused every connection"
        try:
            for _ in range(600):  # the shoe's link up: only the table's state can refuse
                devices = await client.call("devices")
                if devices[0]["link"] == "up":
                    break
                await asyncio.sleep(0.05)
            status = await client.call("status")
            assert status["state"] == "out_of_order"
            assert status["software"]["mode"] == "enforce"
            with pytest.raises(ControlError, match="not allowed while the table is out_of_order"):
                await client.call("open")
        finally:
            await client.close()
        return str(status["out_of_order"])
    finally:
        if daemon.returncode is None:
            daemon.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(daemon.communicate(), 30)
        assert b"tabled: table out of order: software: release" in stderr, stderr[-2000:]


# --- upgrades and rollbacks -----------------------------------------------------------------

PIN = "2468"  # config/simulated-table.toml's supervisor "floor"


def _bump(version: str, patch: int) -> str:
    major, minor, _ = version.split(".")
    return f"{major}.{minor}.{patch}"


def _release_of(release: dict[str, object], version: str, *, broken: bool = False) -> Path:
    """Another release, as the vendor would tag it: the version set on top of the tagged
    commit (and with `broken`, a daemon that exits at start), built by the same tooling."""
    repo, tmp = Path(str(release["repo"])), Path(str(release["tmp"]))
    work = tmp / f"work-{version}"
    subprocess.run(["git", "clone", "--quiet", "--branch", TAG, str(repo), str(work)],
                   check=True, capture_output=True)
    for name in ("pyproject.toml", "controller/__init__.py"):
        path = work / name
        path.write_text(path.read_text().replace(f'"{VERSION}"', f'"{version}"', 1))
    if broken:
        daemon = work / "controller" / "daemon.py"
        daemon.write_text(daemon.read_text().replace(
            "    args = parser.parse_args(argv)\n",
            "    args = parser.parse_args(argv)\n"
            "    raise SystemExit('this release cannot start')\n", 1))
    git = ["git", "-C", str(work), "-c", "user.name=vendor", "-c", "user.email=vendor@example.com"]
    subprocess.run([*git, "commit", "--quiet", "-am", f"release {version}"], check=True,
                   capture_output=True)
    subprocess.run([*git, "tag", f"v{version}"], check=True, capture_output=True)
    subprocess.run([*git, "push", "--quiet", str(repo), f"v{version}"], check=True,
                   capture_output=True)
    out = tmp / f"out-{version}"
    build(repo=str(repo), tag=f"v{version}", out=out, key_path=Path(str(release["private"])),
          platforms=["native"], extras="", pip_args=[], build_env_dir=tmp / "build-env")
    return out / f"baccarat-table-controller-v{version}-bundle.tar.gz"


async def _tablectl(tablectl: Path, *argv: str, stdin: str = "",
                    restart: Any = None) -> tuple[int, str]:
    """tablectl as the technician runs it; `restart` plays systemd when tablectl asks
    (its --restart-command touches a file)."""
    process = await asyncio.create_subprocess_exec(
        str(tablectl), *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=_offline_env())
    talk = asyncio.ensure_future(process.communicate(stdin.encode()))
    if restart is not None:
        await restart()
    out, _ = await asyncio.wait_for(talk, 120)
    return int(process.returncode or 0), out.decode()


@pytest.mark.hil
async def test_upgrade_deal_roll_back_deal_and_a_release_that_cannot_start_rolls_back(
        release, later_releases, tmp_path, monkeypatch):
    """N-1 installed deals a shoe; N is staged and activated between shoes (a supervisor),
    deals; a rollback to N-1 deals again; the store is verified at each step. A release
    that cannot start is put back by tabled-rollback.service's command by itself."""
    from hil.table_harness import TableHarness

    from controller.releases import Layout, switch
    from controller.releases import stage as stage_release

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # the unit's environment
    newer, broken = _bump(VERSION, 91), _bump(VERSION, 92)  # built by `later_releases`
    base, public = tmp_path / "opt-tabled", str(release["public"])
    layout = Layout(base)
    # Install N-1 (docs/deployment.md, step 2).
    assert stage_release(layout, release["bundle"], public) == TAG
    switch(layout, TAG, pending=False)
    tablectl = base / ".venv" / "bin" / "tablectl"
    common = ["--base", str(base), "--public-key", public]
    harness = TableHarness(ROOT / "config" / "simulated-table.toml", tmp_path / "table", seed=3,
                           tabled=[str(base / ".venv" / "bin" / "tabled")],
                           extra_overrides=[f"software.public_key={public}"])
    flag = tmp_path / "restart-requested"

    async def restart_when_asked() -> None:
        for _ in range(1200):
            if flag.exists():
                flag.unlink()
                try:
                    if harness.daemon is not None and harness.daemon.returncode is not None:
                        await harness.stop_daemon()  # it had died: only a start is left
                        await harness.start_daemon_ready()
                    else:
                        await harness.restart()
                except RuntimeError:  # the release did not start: systemd would fail the unit
                    pass
                return
            await asyncio.sleep(0.05)
        raise AssertionError("tablectl never asked for the restart")

    restart = ["--restart-command", f"touch {flag}", "--wait", "30", "--socket", harness.socket]

    async def runs(tag: str) -> None:
        status = await harness.call("status")
        assert (status["software"]["release"], status["software"]["verified"]) == (tag, True)
        verified = await harness.call("verify_chain", full=True)
        assert verified["entries"] > 0

    async with harness:
        await runs(TAG)
        assert (await harness.play(shoes=1)).shoes_completed == 1
        await runs(TAG)

        newer_bundle = await asyncio.to_thread(later_releases["newer"].result)
        code, out = await _tablectl(tablectl, "software", "stage", str(newer_bundle), *common,
                                    "--socket", harness.socket)
        assert code == exitcodes.OK, out
        assert out.splitlines()[-1] == "recorded in the table's log"
        code, out = await _tablectl(tablectl, "software", "activate", f"v{newer}",
                                    "--supervisor", "floor", "--pin-stdin", *common, *restart,
                                    stdin=PIN + "\n", restart=restart_when_asked)
        assert code == exitcodes.OK, out
        assert out.splitlines()[-1] == f"the daemon runs v{newer}: verified"
        assert (layout.current(), layout.previous(), layout.pending()) == (f"v{newer}", TAG,
                                                                           None)
        await runs(f"v{newer}")  # N opened N-1's store, verified
        assert (await harness.play(shoes=1)).shoes_completed == 2
        await runs(f"v{newer}")

        code, out = await _tablectl(tablectl, "software", "rollback", "--supervisor", "floor",
                                    "--pin-stdin", *common, *restart, stdin=PIN + "\n",
                                    restart=restart_when_asked)
        assert code == exitcodes.OK, out
        assert layout.current() == TAG
        await runs(TAG)  # N-1 opens the store N wrote
        assert (await harness.play(shoes=1)).shoes_completed == 3
        await runs(TAG)

        # A release that cannot start: activated, it fails; the rollback unit's command,
        # with the previous release's tablectl, puts N-1 back and records it.
        broken_bundle = await asyncio.to_thread(later_releases["broken"].result)
        code, out = await _tablectl(tablectl, "software", "stage", str(broken_bundle), *common,
                                    "--socket", harness.socket)
        assert code == exitcodes.OK, out
        code, out = await _tablectl(tablectl, "software", "activate", f"v{broken}",
                                    "--supervisor", "floor", "--pin-stdin", *common, *restart,
                                    "--wait", "3", stdin=PIN + "\n",
                                    restart=restart_when_asked)
        assert code == exitcodes.DAEMON_NOT_RUNNING, out
        assert layout.pending() is not None and layout.current() == f"v{broken}"
        code, out = await _tablectl(base / "previous" / "venv" / "bin" / "tablectl", "software",
                                    "rollback", "--automatic", *common, *restart,
                                    restart=restart_when_asked)
        assert code == exitcodes.OK, out
        assert out.splitlines()[0] == f"automatic rollback: v{broken} did not start; {TAG} " \
                                      "is current again"
        assert (layout.current(), layout.pending()) == (TAG, None)
        await runs(TAG)
        # Nothing is pending now: a later failure is not the upgrade's.
        code, out = await _tablectl(tablectl, "software", "rollback", "--automatic", *common)
        assert code == exitcodes.REFUSED and "no activation is pending" in out

        events = await harness.call("events", limit=10_000, oldest_first=True)
    software = [(e["kind"], {k: v for k, v in e["payload"].items() if k != "supervisor"})
                for e in events if e["kind"].startswith("software_")]
    assert software == [
        ("software_staged", {"release": f"v{newer}"}),
        ("software_activated", {"release": f"v{newer}", "from_release": TAG}),
        ("software_rolled_back", {"release": TAG, "from_release": f"v{newer}",
                                  "automatic": False}),
        ("software_staged", {"release": f"v{broken}"}),
        ("software_activated", {"release": f"v{broken}", "from_release": TAG}),
        ("software_rolled_back", {"release": TAG, "from_release": f"v{broken}",
                                  "automatic": True}),
    ]
    started = [e["payload"]["release"] for e in events if e["kind"] == "daemon_started"]
    assert started == [TAG, f"v{newer}", TAG, TAG]


# The previous release: its tag in this repository, else the commit it was built from
# (main's last commit at 0.1.0 before releases existed). Update with each release.
PREVIOUS_RELEASE = ("v0.1.0", "d4f687b3fc7ef0f5aaa792cd015503d9a8d29bba")


def _previous_commit() -> str:
    tag, commit = PREVIOUS_RELEASE
    tagged = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                             f"{tag}^{{commit}}"], capture_output=True, text=True)
    return tagged.stdout.strip() if tagged.returncode == 0 else commit


def _previous_release(release: dict[str, object]) -> Path | None:
    """The previous release's bundle, built from its commit by the same tooling; None when
    this clone lacks that commit."""
    previous, commit = PREVIOUS_RELEASE[0], _previous_commit()
    repo, tmp = Path(str(release["repo"])), Path(str(release["tmp"]))
    if subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                      capture_output=True).returncode != 0:
        return None
    subprocess.run(["git", "-C", str(repo), "tag", "-f", previous, commit], check=True,
                   capture_output=True)
    build(repo=str(repo), tag=previous, out=tmp / "out-previous", key_path=Path(
        str(release["private"])), platforms=["native"], extras="", pip_args=[],
        build_env_dir=tmp / "build-env")
    return tmp / "out-previous" / "bundle"


@pytest.mark.hil
async def test_a_store_the_previous_release_wrote_opens_verifies_and_plays(
        release, later_releases, tmp_path, monkeypatch):
    """The previous release (built from its commit by the same tooling) deals a shoe into a
    new store; this release, installed beside it and made current, opens that store,
    verifies all of it, and deals the next shoe."""
    from hil.table_harness import TableHarness

    from controller.releases import Layout, switch
    from controller.releases import stage as stage_release

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    previous = PREVIOUS_RELEASE[0]
    previous_bundle = await asyncio.to_thread(later_releases["previous"].result)
    if previous_bundle is None:
        _absent(f"the previous release's commit {_previous_commit()[:12]} (a clone without "
                "history?)")
    base, public = tmp_path / "opt-tabled", str(release["public"])
    layout = Layout(base)
    stage_release(layout, previous_bundle, public)
    switch(layout, previous, pending=False)
    tabled = [str(base / ".venv" / "bin" / "tabled")]
    workdir = tmp_path / "table"
    old_config = layout.release(previous) / "bundle" / "config" / "simulated-table.toml"
    workdir.mkdir()
    made = subprocess.run([*tabled, "--config", str(old_config), "--set",
                           f"store.path={workdir / 'table.sqlite'}", "--set",
                           f"control.socket={workdir / 'control.sock'}", "--init-store"],
                          capture_output=True, text=True, env=_offline_env())
    assert made.returncode == 0, made.stderr  # the previous release makes the store too
    old = TableHarness(old_config, workdir, seed=5, tabled=tabled)
    async with old:
        assert (await old.call("status"))["version"] == previous.removeprefix("v")
        assert (await old.play(shoes=1)).shoes_completed == 1

    assert stage_release(layout, release["bundle"], public) == TAG
    switch(layout, TAG, pending=False)  # the first upgrade from a release without activate
    new = TableHarness(layout.release(TAG) / "bundle" / "config" / "simulated-table.toml",
                       workdir, seed=6, tabled=tabled,
                       extra_overrides=[f"software.public_key={public}"])
    async with new:
        status = await new.call("status")
        assert (status["state"], status["software"]["release"],
                status["software"]["verified"]) == ("end_of_shoe", TAG, True)
        assert status["shoe"]["shoe_no"] == 1
        full = await new.call("verify_chain", full=True)
        assert full["entries"] > 1000  # the previous release's whole shoe, every entry checked
        await new.skip_history()
        assert (await new.play(shoes=1, resume=True)).shoes_completed == 1
        assert (await new.call("status"))["shoe"]["shoe_no"] == 2
        await new.call("verify_chain", full=True)
