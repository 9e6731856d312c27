"""A release as a vendor builds it and a technician installs it (docs/deployment.md):
built twice from a clean clone at a tag with identical digests, installed offline into a
fresh virtualenv from the bundle alone, verified by `tablectl software verify`; one changed
byte then fails the verify and keeps the daemon out of order, naming the file.

The tag is made on this checkout's committed HEAD (uncommitted edits are not in a release).
The bundle is built for this machine's platform only (`--platform native`): the Pi's
platforms are the same code with other `pip download --platform` tags. Building downloads
the dependencies' wheels (PyPI or pip's configured indexes and its cache); without them the
test skips, and fails under CI=true. About 15 s.
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
from pathlib import Path

import pytest

from controller.cli import exitcodes
from controller.control import ControlClient, ControlError
from controller.software import PACKAGES
from tools.release import ReleaseError, build, keygen

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

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
            "public": public}


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
        for _ in range(600):
            if socket.exists() or daemon.returncode is not None:
                break
            await asyncio.sleep(0.05)
        assert socket.exists(), "tabled did not open its control socket"
        client = await ControlClient(str(socket)).connect()
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
        daemon.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(daemon.communicate(), 30)
        assert b"tabled: table out of order: software: release" in stderr
