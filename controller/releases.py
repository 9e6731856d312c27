"""Releases side by side under one base directory, and the `current` link that picks one.

    /opt/tabled/releases/<tag>/bundle/     the release's bundle, unpacked
    /opt/tabled/releases/<tag>/venv/       its virtualenv, manifest.json(.sig) beside bin/
    /opt/tabled/current  -> releases/<tag>  the release that runs
    /opt/tabled/previous -> releases/<tag>  the one before it: where a rollback goes
    /opt/tabled/.venv, config, systemd, docs -> current/...   the paths the units use
    /opt/tabled/activation-pending         an activation whose release has not yet started

Only files are handled here (by `tablectl software stage|activate|rollback`, as root);
the table's consent (a supervisor, between shoes) and the log entries are the daemon's
(`software_change`, `software_record`). docs/deployment.md, "Upgrade and roll back".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import ControllerError
from controller.software import MANIFEST_NAME, SIGNATURE_SUFFIX, load_manifest
from controller.text_files import loads_json

DEFAULT_BASE = "/opt/tabled"
# The tree's links into the current release: (link, target relative to the base).
TREE_LINKS = ((".venv", "current/venv"), ("config", "current/bundle/config"),
              ("systemd", "current/bundle/systemd"), ("docs", "current/bundle/docs"))
PENDING = "activation-pending"
LOCK = "requirements.lock"


class ReleaseError(ControllerError):
    """A release cannot be staged, activated or rolled back; the message says why."""


@dataclass(frozen=True)
class Layout:
    base: Path

    @property
    def releases(self) -> Path:
        return self.base / "releases"

    def release(self, tag: str) -> Path:
        if not tag or "/" in tag or tag in (".", ".."):
            raise ReleaseError(f"release {tag!r}: allowed: a release tag such as v0.2.0")
        return self.releases / tag

    def staged(self, tag: str) -> Path:
        """The release's directory, or ReleaseError naming what is staged when it is not."""
        release = self.release(tag)
        if not os.path.isdir(release / "venv"):  # pathlib's raises for a tag too long
            raise ReleaseError(f"release {tag} is not staged in {self.releases} (staged: "
                               f"{', '.join(self.installed()) or 'none'})")
        return release

    def installed(self) -> list[str]:
        if not self.releases.is_dir():
            return []
        return sorted(p.name for p in self.releases.iterdir() if (p / "venv").is_dir())

    def _target(self, name: str) -> str | None:
        try:
            return Path(os.readlink(self.base / name)).name
        except OSError:
            return None

    def current(self) -> str | None:
        return self._target("current")

    def previous(self) -> str | None:
        return self._target("previous")

    def pending(self) -> dict[str, Any] | None:
        try:
            return dict(loads_json((self.base / PENDING).read_text()))
        except (OSError, ValueError, TypeError):  # TypeError: JSON, but not an object
            return None


def _link(path: Path, target: str) -> None:
    """Point `path` at `target` in one step (a new link renamed over the old)."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    os.unlink(temporary)
    os.symlink(target, temporary)
    os.replace(temporary, path)


def _unpack(source: Path, into: Path) -> Path:
    """The bundle (a directory or the release's .tar.gz) copied to `into`/bundle."""
    bundle = into / "bundle"
    if os.path.isdir(source):  # pathlib's test raises for a name too long to be a file
        if not (source / MANIFEST_NAME).is_file():
            raise ReleaseError(f"{source}: holds no {MANIFEST_NAME}; allowed: a release bundle "
                               "directory or its .tar.gz, built by tools/release.py")
        if into.resolve().is_relative_to(source.resolve()):
            # Copied into itself, the copy would never end (each level holds the next).
            raise ReleaseError(f"{source}: holds the releases directory "
                               f"({into.parent}); allowed: a bundle outside the base")
        try:
            shutil.copytree(source, bundle)
        except OSError as exc:  # shutil.Error (a list of failed files) is one too
            failed = exc.args[0][0] if isinstance(exc, shutil.Error) and exc.args[0] else exc
            raise ReleaseError(f"{source}: cannot be copied ({failed}); allowed: a release "
                               "bundle directory that can be read whole") from None
        return bundle
    try:
        with tarfile.open(source, "r:gz") as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 on
                tar.extractall(into, filter="data")  # no links out, no devices, no owners
            else:
                for member in tar.getmembers():
                    if not (member.isfile() or member.isdir()) or member.name.startswith("/") \
                            or ".." in Path(member.name).parts:
                        raise tarfile.TarError(f"member {member.name!r} is not a plain file "
                                               "inside the bundle")
                tar.extractall(into)
    except (OSError, ValueError, tarfile.TarError) as exc:  # ValueError: a NUL in the path
        raise ReleaseError(f"{source}: cannot be unpacked ({exc}); allowed: a release bundle "
                           "directory or its .tar.gz") from None
    if not (bundle / MANIFEST_NAME).is_file():
        raise ReleaseError(f"{source}: holds no bundle/{MANIFEST_NAME}; allowed: a release "
                           "bundle built by tools/release.py")
    return bundle


def _offline_env() -> dict[str, str]:
    """pip with the bundle alone: no configured indexes or find-links; no bytecode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PYTHONDONTWRITEBYTECODE": "1"}


def verify_release(venv: Path, public_key: str) -> str:
    """The release's own `tablectl software verify`; its report, or ReleaseError."""
    try:
        done = subprocess.run([str(venv / "bin" / "tablectl"), "software", "verify",
                               "--public-key", public_key], capture_output=True, text=True,
                              env=_offline_env())
    except OSError as exc:  # its tablectl is missing or cannot be run
        raise ReleaseError(f"{venv}: its tablectl cannot be run ({exc.strerror}): the "
                           "release is not installed whole; stage it again") from None
    if done.returncode == 2 and "invalid choice: 'software'" in done.stderr:
        return _verify_from_here(venv, public_key)  # a release before 0.2.0
    if done.returncode != 0:
        raise ReleaseError(f"{venv}: does not verify:\n{done.stdout}{done.stderr}")
    return done.stdout


def _verify_from_here(venv: Path, public_key: str) -> str:
    """A release whose tablectl cannot verify itself, checked by this one: its files under
    its site-packages against its manifest (its console scripts are not compared)."""
    from controller.software import SoftwareConfig, SoftwareError, verify_installed

    sites = sorted((venv / "lib").glob("python3*/site-packages"))
    try:
        result = verify_installed(SoftwareConfig(manifest=str(venv / MANIFEST_NAME),
                                                 public_key=public_key),
                                  root=sites[0] if sites else venv, scripts=False)
    except SoftwareError as exc:
        raise ReleaseError(f"{venv}: does not verify: {exc}") from None
    if not result.ok:
        raise ReleaseError(f"{venv}: does not verify: {result.summary()}")
    return result.summary() + "\n"


def stage(layout: Layout, source: Path, public_key: str, *,
          python: str | None = None) -> str:
    """Install a release beside the others, offline, and verify it; returns its tag. The
    bundle's manifest must be signed with `public_key` before anything is installed."""
    try:
        layout.releases.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".staging-", dir=layout.releases))
    except OSError as exc:
        raise ReleaseError(f"--base {layout.base}: cannot hold releases ({exc.strerror}: "
                           f"{exc.filename}); allowed: a directory this user can write, such "
                           f"as {DEFAULT_BASE}") from None
    try:
        bundle = _unpack(source, work)
        try:
            manifest, _ = load_manifest(bundle / MANIFEST_NAME, Path(public_key))
        except Exception as exc:  # SoftwareError: not the vendor's, or unreadable
            raise ReleaseError(f"{source}: {exc}") from None
        target = layout.release(manifest.release)
        if target.exists():
            raise ReleaseError(f"release {manifest.release} is already staged in {target}")
        # The virtualenv is made in its final place: its scripts name their interpreter by
        # its path.
        os.rename(work, target)
        work, bundle, venv = target, target / "bundle", target / "venv"
        base_python = str(python or getattr(sys, "_base_executable", sys.executable))
        subprocess.run([base_python, "-m", "venv", str(venv)], check=True, capture_output=True)
        installed = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
             "--no-index", "--find-links", str(bundle), "-r", str(bundle / LOCK)],
            capture_output=True, text=True, env=_offline_env())
        if installed.returncode != 0:
            raise ReleaseError(f"installing {manifest.release} from its bundle failed:\n"
                               f"{installed.stderr[-3000:]}")
        for name in (MANIFEST_NAME, MANIFEST_NAME + SIGNATURE_SUFFIX):
            shutil.copy(bundle / name, venv / name)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    verify_release(target / "venv", public_key)
    return manifest.release


def switch(layout: Layout, to: str, *, pending: bool) -> str | None:
    """`current` -> releases/<to>, `previous` -> what was current; the tree's links made if
    missing. With `pending`, the activation is marked until the release has started
    (`confirm`). Returns the release that was current."""
    layout.staged(to)
    was = layout.current()
    if was is not None and was != to:
        _link(layout.base / "previous", f"releases/{was}")
    _link(layout.base / "current", f"releases/{to}")
    for name, target in TREE_LINKS:
        _link(layout.base / name, target)
    marker = layout.base / PENDING
    if pending:
        marker.write_text(json.dumps({"from": was, "to": to, "at": round(time.time())}) + "\n")
    else:
        marker.unlink(missing_ok=True)
    return was


def confirm(layout: Layout) -> None:
    """The activated release started: a later failure is no reason to go back."""
    (layout.base / PENDING).unlink(missing_ok=True)


def rollback_target(layout: Layout, *, automatic: bool) -> str:
    """Where a rollback goes: the release before the current one. Automatic only while an
    activation is pending (the release never started), and only to where it came from."""
    if automatic:
        pending = layout.pending()
        if pending is None or pending.get("to") != layout.current():
            raise ReleaseError("no activation is pending: the current release started, so a "
                               "failure now is not the upgrade's; nothing rolled back")
        target = pending.get("from")
    else:
        target = layout.previous()
    if not target or target == layout.current():
        raise ReleaseError(f"no earlier release to roll back to (current: {layout.current()}, "
                           f"staged: {', '.join(layout.installed()) or 'none'})")
    return str(target)
