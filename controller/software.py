"""Software authentication: the installed program files against the release's signed manifest.

A release (tools/release.py) ships `manifest.json`, listing the SHA-256 of every file the
project's wheel installs under its packages, and `manifest.json.sig`, a raw Ed25519
signature over the manifest's exact bytes made with the vendor's release key. This module
checks both the way docs/deployment.md ("Verify the software") tells a regulator to
recompute them with `sha256sum` and `openssl`:

- each file: SHA-256 of its bytes, compared with the manifest's entry;
- with a seed (GAT-style): HMAC-SHA256 keyed by the seed's bytes over the contents of every
  file, concatenated in the manifest's order (the order of its `files` list);
- every file under the packages that the manifest does not list (stray bytecode in
  `__pycache__` too: it would run in place of its verified source) is reported as extra.

`tablectl software verify` and the daemon's start (`Daemon.check_software`) both use it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.errors import ControllerError, shown_setting
from controller.text_files import read_regular_file

DIST_NAME = "baccarat-table-controller"
PACKAGES = ("cards", "controller", "drivers", "firmware_bridge", "hil")
MANIFEST_FORMAT = 1
MANIFEST_NAME = "manifest.json"
SIGNATURE_SUFFIX = ".sig"
DEFAULT_PUBLIC_KEY = "/etc/tabled/release-signing.pub"
MODES = ("off", "warn", "enforce")
SEED_BYTES = (1, 64)  # GAT seeds are short; 64 bytes is HMAC-SHA256's block size


def default_manifest() -> Path:
    """Where a release install keeps its manifest: in the virtualenv's own directory
    (docs/deployment.md copies it there beside `bin/`)."""
    return Path(sys.prefix) / MANIFEST_NAME


def program_root() -> Path:
    """The directory the running program's packages are imported from (site-packages of
    an installed release; the checkout itself in a development tree)."""
    return Path(__file__).resolve().parents[1]


def running_from_checkout() -> bool:
    """True in a development tree (the packages are imported from a git checkout or an
    editable install), False for an installed release."""
    root = program_root()
    return (root / ".git").exists() or (root / "pyproject.toml").exists()


class SoftwareError(ControllerError):
    """The manifest, its signature or the public key cannot be used. `signature` is True
    when the files were readable and the signature itself is wrong."""

    def __init__(self, message: str, *, signature: bool = False) -> None:
        super().__init__(message)
        self.signature = signature


@dataclass(frozen=True)
class SoftwareConfig:
    """`[software]` in the table's configuration."""

    verify: str = ""  # "" = by where it runs: enforce for a release, warn in a checkout
    manifest: str = ""  # "" = default_manifest()
    public_key: str = DEFAULT_PUBLIC_KEY

    @property
    def mode(self) -> str:
        if self.verify:
            return self.verify
        return "warn" if running_from_checkout() else "enforce"


SOFTWARE_KEYS = {
    "verify": "'off', 'warn' or 'enforce' (default: enforce for an installed release, warn "
              "in a development checkout)",
    "manifest": "the release's manifest.json, e.g. /opt/tabled/current/venv/manifest.json",
    "public_key": f"the vendor's Ed25519 public key (PEM), e.g. {DEFAULT_PUBLIC_KEY}",
}


def parse_software(section: Mapping[str, Any], problems: list[str]) -> SoftwareConfig:
    """`[software]` into a SoftwareConfig; every bad key is appended to `problems`."""
    values: dict[str, str] = {}
    for key, value in section.items():
        if key not in SOFTWARE_KEYS:
            problems.append(f"software.{key}: unknown key; allowed keys: "
                            f"{', '.join(sorted(SOFTWARE_KEYS))}")
        elif not isinstance(value, str) or not value or (key == "verify" and value not in MODES):
            problems.append(f"software.{key} = {shown_setting(value)}: not allowed; allowed: "
                            f"{SOFTWARE_KEYS[key]}")
        else:
            values[key] = value
    return SoftwareConfig(**values)


@dataclass(frozen=True)
class FileDigest:
    path: str  # relative to the program root, '/'-separated
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    release: str
    version: str
    files: tuple[FileDigest, ...]
    console_scripts: Mapping[str, str]
    fields: Mapping[str, Any]


@dataclass
class Verification:
    """What `verify` found; `ok` only if every listed file matches and nothing is extra."""

    manifest: Manifest
    path: str
    root: str
    key_fingerprint: str
    differing: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # console scripts that differ
    seeded_hmac: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.differing or self.missing or self.extra or self.scripts)

    def problems(self) -> list[str]:
        bytecode = ("(bytecode the release does not contain: remove every __pycache__ "
                    "directory under the program root)")
        return ([f"{p}: differs from the release" for p in self.differing]
                + [f"{p}: missing" for p in self.missing]
                + [f"{p}: not in the release" + (f" {bytecode}" if "__pycache__/" in p else "")
                   for p in self.extra]
                + self.scripts)

    def summary(self) -> str:
        found = self.problems()
        if not found:
            return f"release {self.manifest.release}: {len(self.manifest.files)} files verified"
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        return f"release {self.manifest.release}: " + "; ".join(found[:3]) + more

    def as_json(self) -> dict[str, Any]:
        return {"release": self.manifest.release, "version": self.manifest.version,
                "verified": self.ok, "manifest": self.path, "root": self.root,
                "key_fingerprint": self.key_fingerprint,
                "files": len(self.manifest.files), "differing": self.differing,
                "missing": self.missing, "extra": self.extra, "console_scripts": self.scripts,
                "seeded_hmac_sha256": self.seeded_hmac}


def parse_seed(text: str) -> bytes:
    low, high = SEED_BYTES
    if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", text) or not low <= len(text) // 2 <= high:
        raise ValueError(f"--seed {text!r}: allowed: {2 * low} to {2 * high} hexadecimal "
                         "digits, an even number of them, e.g. 5f3a9c01")
    return bytes.fromhex(text)


def list_program_files(root: Path, packages: Sequence[str] = PACKAGES) -> list[str]:
    """Every file under the packages, relative to `root`, in the manifest's order (sorted
    by path). Stray bytecode is included: the check must see it."""
    found: list[str] = []
    for package in packages:
        base = root / package
        if base.is_dir():
            found.extend(p.relative_to(root).as_posix() for p in base.rglob("*") if p.is_file())
    return sorted(found)


def key_fingerprint(public_key_pem: bytes) -> str:
    """SHA-256 of the key's raw 32 bytes, as `openssl pkey -pubin -outform DER | tail -c 32
    | sha256sum` prints it (docs/deployment.md)."""
    from cryptography.hazmat.primitives import serialization

    key = _load_public_key(public_key_pem)
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _load_public_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as exc:
        raise SoftwareError(f"the public key is not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SoftwareError(f"the public key is a {type(key).__name__}; allowed: an Ed25519 "
                            "public key (PEM)")
    return key


def _read(path: Path, what: str, allowed: str) -> bytes:
    try:
        return read_regular_file(path)  # not /dev/zero read until memory runs out
    except OSError as exc:
        raise SoftwareError(f"{what} {path}: cannot be read ({exc.strerror or exc}); "
                            f"allowed: {allowed}") from None


def load_manifest(manifest_path: Path, public_key_path: Path) -> tuple[Manifest, str]:
    """The manifest, once its signature checks out with the public key; and the key's
    fingerprint. Raises SoftwareError naming what is wrong."""
    body = _read(manifest_path, "manifest", "a release's manifest.json ([software] manifest "
                 "or --manifest)")
    signature_path = manifest_path.with_name(manifest_path.name + SIGNATURE_SUFFIX)
    signature = _read(signature_path, "signature", "the manifest's Ed25519 signature, "
                      "64 bytes, beside it")
    pem = _read(public_key_path, "public key", "the vendor's Ed25519 release key (PEM), "
                "[software] public_key or --public-key")
    from cryptography.exceptions import InvalidSignature

    key = _load_public_key(pem)
    try:
        key.verify(signature, body)
    except InvalidSignature:
        raise SoftwareError(f"{manifest_path}: its signature ({signature_path}) does not "
                            f"verify with the public key {public_key_path}", signature=True) from None
    return parse_manifest(body, str(manifest_path)), key_fingerprint(pem)


def parse_manifest(body: bytes, source: str) -> Manifest:
    try:
        data = json.loads(body)
        if data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"format {data.get('format')!r}, this program reads format "
                             f"{MANIFEST_FORMAT}")
        files = tuple(FileDigest(str(f["path"]), str(f["sha256"]), int(f["size"]))
                      for f in data["files"])
        scripts = {str(k): str(v) for k, v in data["console_scripts"].items()}
        return Manifest(str(data["release"]), str(data["version"]), files, scripts, data)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SoftwareError(f"{source}: not a release manifest ({exc!r})") from None


def installed_console_scripts() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        points = distribution(DIST_NAME).entry_points
    except PackageNotFoundError:
        return {}
    return {p.name: p.value for p in points if p.group == "console_scripts"}


def verify(manifest: Manifest, root: Path, *, seed: bytes | None = None,
           console_scripts: Mapping[str, str] | None = None) -> tuple[list[str], list[str],
                                                                        list[str], list[str],
                                                                        str | None]:
    """(differing, missing, extra, console-script problems, seeded HMAC or None) of the
    files under `root` against `manifest`."""
    listed = {f.path for f in manifest.files}
    differing, missing = [], []
    mac = hmac.new(seed, digestmod=hashlib.sha256) if seed is not None else None
    for entry in manifest.files:
        path = root / entry.path
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            missing.append(entry.path)
            continue
        if hashlib.sha256(content).hexdigest() != entry.sha256:
            differing.append(entry.path)
        if mac is not None:
            mac.update(content)
    packages = sorted({f.path.split("/", 1)[0] for f in manifest.files})
    extra = [p for p in list_program_files(root, packages) if p not in listed]
    scripts = []
    if console_scripts is not None:
        for name in sorted(set(manifest.console_scripts) | set(console_scripts)):
            want, have = manifest.console_scripts.get(name), console_scripts.get(name)
            if want != have:
                scripts.append(f"console script {name}: runs {have or 'nothing'}, the release "
                               f"has {want or 'no such script'}")
    seeded = mac.hexdigest() if mac is not None and not missing else None
    return differing, missing, extra, scripts, seeded


def verify_installed(config: SoftwareConfig, *, seed: bytes | None = None,
                     root: Path | None = None, scripts: bool = True) -> Verification:
    """The installed program against its signed manifest (SoftwareError if the manifest,
    its signature or the key cannot be used)."""
    manifest_path = Path(config.manifest) if config.manifest else default_manifest()
    manifest, fingerprint = load_manifest(manifest_path, Path(config.public_key))
    where = root or program_root()
    differing, missing, extra, script_problems, seeded = verify(
        manifest, where, seed=seed,
        console_scripts=installed_console_scripts() if scripts else None)
    return Verification(manifest, str(manifest_path), str(where), fingerprint, differing,
                        missing, extra, script_problems, seeded)


def start_check(config: SoftwareConfig) -> tuple[dict[str, Any], bool]:
    """The daemon's check at start: what `status` shows (`verified` True or False, the
    release, and `detail` naming the first files that differ, or why nothing was checked),
    and whether the table must stay out of order (mode enforce and not verified)."""
    mode = config.mode
    if mode == "off":
        return {"mode": mode, "release": None, "verified": False,
                "detail": "not checked ([software] verify = 'off')"}, False
    try:
        result = verify_installed(config)
    except (SoftwareError, ImportError) as exc:  # ImportError: cryptography not installed
        return ({"mode": mode, "release": None, "verified": False, "detail": str(exc)},
                mode == "enforce")
    return ({"mode": mode, "release": result.manifest.release, "verified": result.ok,
             "detail": result.summary(), "files": len(result.manifest.files)},
            mode == "enforce" and not result.ok)
