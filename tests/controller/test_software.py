"""Software authentication (controller/software.py): the signed manifest, the per-file
SHA-256 and the seeded HMAC, `tablectl software verify`, and the daemon's check at start."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace
from pathlib import Path

import pytest

from controller.cli import exitcodes, main
from controller.config import ConfigError, parse_config
from controller.software import (
    SoftwareConfig, SoftwareError, load_manifest, parse_seed, parse_software, verify,
    verify_installed,
)
from tests.controller.test_daemon import config_for, running
from tools.release import keygen, manifest_bytes, sign, _load_private_key

FILES = {"cards/__init__.py": b"CARDS = 52\n", "controller/daemon.py": b"print('tabled')\n",
         "controller/display/static/board.css": b"body { margin: 0 }\n"}
SCRIPTS = {"tabled": "controller.daemon:main"}


def release(tmp_path: Path, files: dict[str, bytes] = FILES) -> tuple[Path, Path, Path]:
    """(program root, manifest, public key) of a release of `files`, signed, installed."""
    root = tmp_path / "site-packages"
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    private, public = keygen(tmp_path / "key")
    body = manifest_bytes(tag="v9.9.9", version="9.9.9", commit="c0ffee" * 6 + "abcd",
                          epoch=1_700_000_000, files=files, scripts=SCRIPTS, bundle_files=[],
                          platforms=["native"], missing={})
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(body)
    (tmp_path / "manifest.json.sig").write_bytes(sign(_load_private_key(private), body))
    return root, manifest, public


def test_an_untouched_release_verifies_and_the_seeded_hmac_is_over_the_files_in_order(
        tmp_path):
    root, manifest_path, public = release(tmp_path)
    manifest, fingerprint = load_manifest(manifest_path, public)
    assert [f.path for f in manifest.files] == sorted(FILES)
    assert manifest.files[1].sha256 == hashlib.sha256(b"print('tabled')\n").hexdigest()
    seed = bytes.fromhex("5f3a9c01")
    differing, missing, extra, scripts, seeded = verify(manifest, root, seed=seed,
                                                        console_scripts=SCRIPTS)
    assert (differing, missing, extra, scripts) == ([], [], [], [])
    # What `openssl dgst -sha256 -mac HMAC -macopt hexkey:5f3a9c01` prints for the files
    # concatenated in the manifest's order.
    expected = hmac.new(seed, b"".join(FILES[p] for p in sorted(FILES)), "sha256").hexdigest()
    assert seeded == expected
    # The fingerprint is the SHA-256 of the raw 32-byte key: the PEM's last 32 DER bytes.
    import base64

    der = base64.b64decode("".join(public.read_text().splitlines()[1:-1]))
    assert fingerprint == hashlib.sha256(der[-32:]).hexdigest()


def test_every_changed_missing_or_extra_file_is_named(tmp_path):
    root, manifest_path, public = release(tmp_path)
    (root / "controller" / "daemon.py").write_bytes(b"print('tabled!')\n")  # one byte more
    (root / "cards" / "__init__.py").unlink()
    (root / "controller" / "__pycache__").mkdir()
    (root / "controller" / "__pycache__" / "daemon.cpython-311.pyc").write_bytes(b"\0")
    (root / "drivers").mkdir()
    (root / "drivers" / "rogue.py").write_bytes(b"")  # a package the release does not ship
    result = verify_installed(SoftwareConfig(manifest=str(manifest_path),
                                             public_key=str(public)), root=root, scripts=False)
    assert not result.ok
    assert result.differing == ["controller/daemon.py"]
    assert result.missing == ["cards/__init__.py"]
    assert result.extra == ["controller/__pycache__/daemon.cpython-311.pyc"]
    assert result.problems() == [
        "controller/daemon.py: differs from the release",
        "cards/__init__.py: missing",
        "controller/__pycache__/daemon.cpython-311.pyc: not in the release (bytecode the "
        "release does not contain: remove every __pycache__ directory under the program root)"]
    assert result.summary().startswith("release v9.9.9: controller/daemon.py: differs from "
                                       "the release; cards/__init__.py: missing; ")


def test_a_changed_manifest_or_a_foreign_key_fails_the_signature(tmp_path):
    _, manifest_path, public = release(tmp_path)
    body = json.loads(manifest_path.read_bytes())
    body["files"][1]["sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(body, indent=1) + "\n")
    with pytest.raises(SoftwareError, match="its signature .* does not verify") as caught:
        load_manifest(manifest_path, public)
    assert caught.value.signature
    other = tmp_path / "other"
    _, other_public = keygen(other)
    with pytest.raises(SoftwareError, match="does not verify with the public key"):
        load_manifest(manifest_path, other_public)
    with pytest.raises(SoftwareError, match=r"public key .*nope.pub: cannot be read"):
        load_manifest(manifest_path, tmp_path / "nope.pub")


def test_seeds_and_the_software_section_are_checked_with_what_is_allowed():
    assert parse_seed("5F3A9c01") == bytes.fromhex("5f3a9c01")
    for bad in ("", "abc", "xyz0", "00" * 65):
        with pytest.raises(ValueError, match="allowed: 2 to 128 hexadecimal digits"):
            parse_seed(bad)
    problems: list[str] = []
    parse_software({"verify": "strict", "manifests": "x"}, problems)
    assert problems == [
        "software.verify = 'strict': not allowed; allowed: 'off', 'warn' or 'enforce' (default: "
        "enforce for an installed release, warn in a development checkout)",
        "software.manifests: unknown key; allowed keys: manifest, public_key, verify"]
    assert SoftwareConfig().mode == "warn"  # this test runs from a checkout
    assert SoftwareConfig(verify="enforce").mode == "enforce"


def test_the_configuration_reports_a_bad_software_section(tmp_path):
    import tomllib

    data = tomllib.loads((Path(__file__).parents[2] / "config" / "simulated-table.toml")
                         .read_text())
    data["software"] = {"verify": "yes"}
    with pytest.raises(ConfigError, match=r"software.verify = 'yes': not allowed"):
        parse_config(data, "table.toml")


def test_tablectl_software_verify_names_the_file_and_exits_5(tmp_path, capsys):
    root, manifest_path, public = release(tmp_path)
    argv = ["software", "verify", "--manifest", str(manifest_path), "--public-key", str(public),
            "--root", str(root), "--seed", "00ff"]
    assert main(argv) == exitcodes.OK
    out = capsys.readouterr().out
    seeded = hmac.new(b"\x00\xff", b"".join(FILES[p] for p in sorted(FILES)),
                      "sha256").hexdigest()
    assert f"  seeded HMAC   {seeded}\n" in out and out.endswith("VERIFIED\n")
    assert out.startswith("release v9.9.9 (version 9.9.9, commit c0ffeec0ffee)\n")
    (root / "controller" / "display" / "static" / "board.css").write_bytes(b"body{}\n")
    assert main([*argv, "--json"]) == exitcodes.INTEGRITY_FAILURE
    result = json.loads(capsys.readouterr().out)
    assert (result["verified"], result["differing"], result["missing"], result["extra"]) == (
        False, ["controller/display/static/board.css"], [], [])
    assert main([*argv[:-2], "--seed", "0g"]) == exitcodes.BAD_ARGUMENTS
    assert "--seed '0g': allowed" in capsys.readouterr().err
    assert main(["software", "verify", "--manifest", str(tmp_path / "none.json"),
                 "--public-key", str(public)]) == exitcodes.BAD_CONFIGURATION
    assert "none.json: cannot be read" in capsys.readouterr().err


async def test_a_development_tree_starts_with_a_warning_and_enforce_holds_the_table(tmp_path):
    config = config_for(tmp_path)
    async with running(config) as client:
        status = await client.call("status")
    assert status["state"] == "closed"
    assert status["software"]["mode"] == "warn"
    assert status["software"]["verified"] is False
    assert status["software"]["detail"].startswith("manifest ")
    assert status["software"]["detail"].endswith("manifest.json: cannot be read (No such file "
                                                  "or directory); allowed: a release's "
                                                  "manifest.json ([software] manifest or "
                                                  "--manifest)")

    # The checkout itself against a release whose daemon.py differs: held, the file named.
    files = {"controller/daemon.py": b"not this daemon\n"}
    _, manifest_path, public = release(tmp_path / "rel", files)
    (tmp_path / "enforced").mkdir()
    enforced = replace(config_for(tmp_path / "enforced"), software=SoftwareConfig(
        verify="enforce", manifest=str(manifest_path), public_key=str(public)))
    async with running(enforced) as client:
        status = await client.call("status")
        events = await client.call("events", kind="daemon_started")
    assert status["state"] == "out_of_order"
    assert status["out_of_order"].startswith(
        "software: release v9.9.9: controller/daemon.py: differs from the release; ")
    assert status["software"]["release"] == "v9.9.9"
    assert events[0]["payload"]["release"] == "v9.9.9"
    assert events[0]["payload"]["software_verified"] is False


async def test_a_change_of_software_needs_a_supervisor_and_is_allowed_only_between_shoes(
        tmp_path):
    from controller.control import ControlError

    floor = {"supervisor": "floor", "pin": "2468"}  # config/simulated-table.toml's
    async with running(config_for(tmp_path)) as client:
        with pytest.raises(ControlError, match="'action' = 'upgrade': allowed: activate, "
                                               "rollback"):
            await client.call("software_change", auth=floor, action="upgrade", release="v1")
        assert await client.call("software_change", auth=floor, action="activate",
                                 release="v9.9.9") == {
            "release": "v9.9.9", "from_release": None, "supervisor": "floor"}
        assert (await client.call("open"))["state"] == "opening"
        with pytest.raises(ControlError, match=r"a change of software is allowed only between "
                                               r"shoes; the table is opening \(allowed: closed, "
                                               r"end_of_shoe, out_of_order\)") as between:
            await client.call("software_change", auth=floor, action="rollback", release="v1")
        # A state refusal, as docs/control-api.md's codes name it (it was `not_allowed`, a
        # code no client knew).
        assert between.value.code == "refused"
        with pytest.raises(ControlError) as unauthorised:
            await client.call("software_change", auth={"supervisor": "floor", "pin": "0000"},
                              action="activate", release="v9.9.9")
        assert unauthorised.value.code == "unauthorised"
        events = await client.call("events", kind="software_activated")
    assert [e["payload"] for e in events] == [
        {"release": "v9.9.9", "from_release": None, "supervisor": "floor"}]


def test_staging_refuses_what_is_not_a_bundle_and_a_base_it_cannot_use(tmp_path, capsys):
    """`tablectl software stage` names what is wrong with its bundle or --base: no manifest,
    a bundle directory that holds the base (a copy into itself: it recursed until Python
    gave up), a base that is a file. Nothing is left under the base's releases."""
    _, _, public = release(tmp_path / "key")
    base = tmp_path / "opt"
    common = ["--base", str(base), "--public-key", str(public)]
    not_bundle = tmp_path / "downloads"
    not_bundle.mkdir()
    assert main(["software", "stage", str(not_bundle), *common]) == exitcodes.FAILURE
    assert capsys.readouterr().err == (
        f"error: {not_bundle}: holds no manifest.json; allowed: a release bundle directory "
        "or its .tar.gz, built by tools/release.py\n")
    holder = tmp_path / "bundle"
    (holder / "opt").mkdir(parents=True)
    (holder / "manifest.json").write_text("{}\n")
    inside = ["--base", str(holder / "opt"), "--public-key", str(public)]
    assert main(["software", "stage", str(holder), *inside]) == exitcodes.FAILURE
    assert capsys.readouterr().err == (
        f"error: {holder}: holds the releases directory ({holder / 'opt' / 'releases'}); "
        "allowed: a bundle outside the base\n")
    assert list((holder / "opt" / "releases").iterdir()) == []
    a_file = tmp_path / "base-file"
    a_file.write_text("")
    assert main(["software", "stage", str(holder), "--base", str(a_file), "--public-key",
                 str(public)]) == exitcodes.FAILURE
    assert capsys.readouterr().err == (
        f"error: --base {a_file}: cannot hold releases (Not a directory: "
        f"{a_file / 'releases'}); allowed: a directory this user can write, such as "
        "/opt/tabled\n")
    assert list((base / "releases").iterdir()) == []


def test_activating_a_release_that_is_not_staged_names_those_that_are(tmp_path, capsys):
    """Exit 1 and the staged tags, not a traceback from running a tablectl that is not
    there (nor exit 5, which says a release did not verify)."""
    base = tmp_path / "opt"
    (base / "releases" / "v0.3.0" / "venv").mkdir(parents=True)
    (base / "releases" / "v0.4.0").mkdir()  # a staging that never made its virtualenv
    for tag, staged in (("v0.4.0", "v0.3.0"), ("v9", "v0.3.0")):
        assert main(["software", "activate", tag, "--supervisor", "ana", "--base", str(base),
                     "--socket", str(tmp_path / "none.sock")]) == exitcodes.FAILURE
        assert capsys.readouterr().err == (
            f"error: release {tag} is not staged in {base / 'releases'} (staged: {staged})\n")
    too_long = "v" + "9" * 300  # longer than a file name may be: pathlib's test raised
    assert main(["software", "activate", too_long, "--supervisor", "ana", "--base",
                 str(base)]) == exitcodes.FAILURE
    assert "is not staged in" in capsys.readouterr().err
    assert main(["software", "activate", "v1", "--supervisor", "ana", "--base",
                 str(tmp_path / "nothing")]) == exitcodes.FAILURE
    assert capsys.readouterr().err == (
        f"error: release v1 is not staged in {tmp_path / 'nothing' / 'releases'} "
        "(staged: none)\n")


def test_hash_pin_with_no_terminal_and_stdin_at_its_end_says_no_pin(tmp_path):
    """With no terminal to ask on, getpass reads stdin; at its end that was an EOFError
    traceback. A process of its own, with no controlling terminal, as a script runs it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "controller.cli", "supervisor", "hash-pin",
                           "ana"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          start_new_session=True, cwd=Path(__file__).resolve().parents[2],
                          timeout=60)
    assert (done.returncode, done.stdout) == (exitcodes.BAD_ARGUMENTS, "")
    assert done.stderr.endswith("\ntablectl: no PIN entered; --pin-stdin reads one line\n")
    assert "Traceback" not in done.stderr


def test_a_restart_command_that_cannot_run_is_refused_before_any_link_moves(tmp_path, capsys):
    """A mistyped --restart-command raised FileNotFoundError out of tablectl after the links
    had moved: the table's files on one release, its daemon still on the other. It is
    checked first now, and nothing changes."""
    import os

    base = tmp_path / "opt"
    for tag in ("v0.3.0", "v0.4.0"):
        (base / "releases" / tag / "venv").mkdir(parents=True)
    os.symlink("releases/v0.4.0", base / "current")
    os.symlink("releases/v0.3.0", base / "previous")
    (base / "activation-pending").write_text('{"from": "v0.3.0", "to": "v0.4.0", "at": 1}\n')
    rollback = ["software", "rollback", "--base", str(base), "--socket",
                str(tmp_path / "none.sock")]
    for command, problem in (
            ("systemctll restart tabled", "systemctll is not a program on PATH"),
            ("sh -c 'systemctl restart tabled", "no closing quotation"),
            ("", "it is empty")):
        for who in (["--supervisor", "ana"], ["--automatic"]):
            code = main([*rollback, *who, "--restart-command", command])
            assert code == exitcodes.BAD_ARGUMENTS
            assert capsys.readouterr().err == (
                f"error: --restart-command {command!r}: {problem}; allowed: a command that "
                "restarts the daemon, such as 'systemctl restart tabled'; nothing was "
                "changed\n")
            assert (os.readlink(base / "current"), os.readlink(base / "previous")) == (
                "releases/v0.4.0", "releases/v0.3.0")
    for wait in ("nan", "inf", "0", "-5", "soon"):
        assert main([*rollback, "--automatic", "--wait", wait]) == exitcodes.BAD_ARGUMENTS
        assert f"argument --wait: {wait!r}: allowed: 1 to 3600 seconds" in (
            capsys.readouterr().err)
