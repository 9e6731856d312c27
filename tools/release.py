r"""Build a release from a tag: a reproducible wheel, a hash-pinned lock of every dependency
for the Pi's platforms, an offline bundle, and the signed manifest (docs/deployment.md,
"Building a release").

    .venv/bin/python -m tools.release keygen --out ~/release-key         # once, kept offline
    .venv/bin/python -m tools.release build --tag v0.2.0 --key ~/release-key/release-signing.key \
        --out dist/v0.2.0

`build` clones the repository at the tag (nothing of the working tree is used), builds the
wheel with the setuptools pinned in tools/build-requirements.txt under SOURCE_DATE_EPOCH
(the tagged commit's time), rewrites it with sorted entries and fixed timestamps, downloads
every dependency's wheels for each target platform and writes:

    OUT/bundle/                      the wheels, requirements.lock, manifest.json(.sig),
                                     release-signing.pub, and the tree's config/, systemd/,
                                     docs/, README.md, CHANGELOG.md
    OUT/baccarat-table-controller-<tag>-bundle.tar.gz   the same, as one reproducible file

Two builds of one tag give byte-identical files (tests/test_release.py).
"""

from __future__ import annotations

import argparse
import email.parser
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from controller.cli import HelpFormatter
from controller.software import DIST_NAME, MANIFEST_FORMAT, MANIFEST_NAME, PACKAGES, \
    SIGNATURE_SUFFIX

ROOT = Path(__file__).resolve().parents[1]
BUILD_REQUIREMENTS = ROOT / "tools" / "build-requirements.txt"
LOCK_NAME = "requirements.lock"
PUBLIC_KEY_NAME = "release-signing.pub"
PRIVATE_KEY_NAME = "release-signing.key"
PYTHON = ("3.11", "cp311")
# manylinux tags a Bookworm Pi (glibc 2.36) runs, and piwheels' plain linux tag.
_MANYLINUX = ("manylinux2014", "manylinux_2_17", "manylinux_2_24", "manylinux_2_28",
              "manylinux_2_31", "manylinux_2_34", "manylinux_2_35", "manylinux_2_36", "linux")
PLATFORMS = {
    "aarch64": "64-bit Raspberry Pi OS (Bookworm), Pi 3/4/5",
    "armv7l": "32-bit Raspberry Pi OS (Bookworm), Pi 2/3/4/5",
    "native": "this build machine's platform, for testing the bundle here",
}
# What a table needs from the tree besides the wheel: the Rules Submissions to start from,
# the systemd units and rules, and the guides (docs/deployment.md links them into /opt/tabled).
TREE_FILES = ("config", "systemd", "docs", "README.md", "CHANGELOG.md")
INSTALL = ("pip install --no-compile --no-index --find-links BUNDLE -r BUNDLE/requirements.lock")


class ReleaseError(Exception):
    """The release cannot be built; the message names what is wrong and what to do."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run(cmd: Sequence[str], *, cwd: Path | None = None,
        env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(list(cmd), cwd=cwd, env=dict(env) if env is not None else None,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ReleaseError(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return done.stdout


# --- keys -----------------------------------------------------------------------------

def keygen(out: Path) -> tuple[Path, Path]:
    """A vendor release key pair: the private key (PKCS#8 PEM, mode 0600) to keep offline,
    the public key (SubjectPublicKeyInfo PEM) to publish and install on every table."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    out.mkdir(parents=True, exist_ok=True)
    private, public = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    if private.exists():
        raise ReleaseError(f"{private} exists: a release key is made once; remove it first "
                           "only if it is to be replaced (every table then needs the new "
                           "public key)")
    key = Ed25519PrivateKey.generate()
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    public.write_bytes(_public_pem(key))
    return private, public


def _public_pem(key: object) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _load_private_key(path: Path) -> object:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"--key {path}: cannot be used ({exc}); allowed: the Ed25519 "
                           "private key made by 'tools.release keygen' (PEM)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReleaseError(f"--key {path}: a {type(key).__name__}; allowed: an Ed25519 key")
    return key


# --- the wheel --------------------------------------------------------------------------

def clone(repo: str, tag: str, into: Path) -> tuple[str, int]:
    """A clean clone of `repo` at `tag`; (commit, commit time)."""
    run(["git", "clone", "--quiet", "--no-local", "--depth", "1", "--branch", tag, repo,
         str(into)])
    commit = run(["git", "-C", str(into), "rev-parse", "HEAD"]).strip()
    epoch = int(run(["git", "-C", str(into), "log", "-1", "--format=%ct"]).strip())
    return commit, epoch


def check_version(src: Path, tag: str) -> str:
    version = tomllib.loads((src / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["version"]
    in_code = re.search(r'__version__ = "([^"]+)"',
                        (src / "controller" / "__init__.py").read_text(encoding="utf-8"))
    if tag != f"v{version}" or in_code is None or in_code[1] != version:
        raise ReleaseError(f"tag {tag!r} does not match the tagged tree's version (pyproject "
                           f"{version!r}, controller/__init__.py "
                           f"{in_code[1] if in_code else None!r}); allowed: tag v<version> "
                           "with both set to that version")
    return str(version)


def build_env(where: Path) -> Path:
    """A virtualenv holding only the pinned build backend; reused when it exists."""
    python = where / "bin" / "python"
    if not (where / ".ready").exists():
        run([sys.executable, "-m", "venv", str(where)])
        run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
             "-r", str(BUILD_REQUIREMENTS)])
        (where / ".ready").touch()
    return python


def build_wheel(src: Path, python: Path, epoch: int, out: Path) -> Path:
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0", "TZ": "UTC",
           "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    raw = out / "raw"
    raw.mkdir(parents=True)
    name = run([str(python), "-c", "import sys; from setuptools import build_meta as b; "
                "print(b.build_wheel(sys.argv[1]))", str(raw)], cwd=src, env=env)
    wheel = raw / name.strip().splitlines()[-1]
    final = out / wheel.name
    normalize_wheel(wheel, final, epoch)
    shutil.rmtree(raw)
    return final


def _zip_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    import time

    t = time.gmtime(max(epoch, 315532800))  # zip cannot hold a time before 1980
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def normalize_wheel(wheel: Path, out: Path, epoch: int) -> None:
    """The same wheel with its entries sorted (the .dist-info last, RECORD at the very end),
    every timestamp the commit's, every mode 0644: nothing of the build machine is left."""
    with zipfile.ZipFile(wheel) as z:
        entries = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}

    def order(name: str) -> tuple[bool, bool, str]:
        return (".dist-info/" in name, name.endswith(".dist-info/RECORD"), name)

    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(entries, key=order):
            info = zipfile.ZipInfo(name, _zip_time(epoch))
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, entries[name], compresslevel=9)


def wheel_contents(wheel: Path) -> tuple[dict[str, bytes], dict[str, str], list[str]]:
    """(the package files, console scripts, Requires-Dist lines) of a wheel."""
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n) for n in z.namelist() if n.split("/", 1)[0] in PACKAGES
                 and not n.endswith("/")}
        dist_info = next(n.split("/", 1)[0] for n in z.namelist() if ".dist-info/" in n)
        points = z.read(f"{dist_info}/entry_points.txt").decode()
        metadata = email.parser.Parser().parsestr(z.read(f"{dist_info}/METADATA").decode())
    scripts, section = {}, ""
    for line in points.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and section == "console_scripts":
            name, _, target = line.partition("=")
            scripts[name.strip()] = target.strip()
    return files, scripts, metadata.get_all("Requires-Dist") or []


# --- dependencies -------------------------------------------------------------------------

def _platform_args(platform: str) -> list[str]:
    if platform == "native":
        return []
    args = [f"--platform={tag}_{platform}" for tag in _MANYLINUX]
    return [*args, f"--python-version={PYTHON[0]}", "--implementation=cp",
            f"--abi={PYTHON[1]}", "--abi=abi3", "--abi=none"]


def _dist_name(filename: str) -> tuple[str, str]:
    """(normalised project name, version) of a wheel or sdist file name."""
    if filename.endswith(".whl"):
        name, version = filename.split("-")[:2]
    else:
        match = re.fullmatch(r"(.+)-([^-]+)\.(?:tar\.gz|zip)", filename)
        if match is None:
            raise ReleaseError(f"{filename}: neither a wheel nor an sdist")
        name, version = match[1], match[2]
    return re.sub(r"[-_.]+", "-", name).lower(), version


def _packages(bundle: Path) -> list[Path]:
    """The wheels and sdists in the bundle."""
    return sorted(p for p in bundle.iterdir()
                  if p.is_file() and p.name.endswith((".whl", ".tar.gz", ".zip")))


def download(requirements: Sequence[str], platform: str, dest: Path, pip_args: Sequence[str],
             *, deps: bool) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:", "--dest", str(dest), *_platform_args(platform), *pip_args]
    run([*cmd, *([] if deps else ["--no-deps"]), *requirements])


def gather(wheel: Path, extras: str, platforms: Sequence[str], bundle: Path,
           pip_args: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every dependency's files for every platform into `bundle`: ({name: version} pinned
    from the first platform's resolution, {platform: [names with no wheel there]}), each
    missing one's sdist also put in the bundle."""
    first, *others = platforms
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    download([spec], first, bundle, pip_args, deps=True)
    own = re.sub(r"[-_.]+", "-", DIST_NAME)
    pins = {n: v for n, v in (_dist_name(p.name) for p in _packages(bundle)) if n != own}
    missing: dict[str, list[str]] = {first: []}
    for platform in others:
        wanted = [f"{n}=={v}" for n, v in sorted(pins.items())]
        try:
            download(wanted, platform, bundle, pip_args, deps=False)
            missing[platform] = []
        except ReleaseError:  # find which: one at a time
            missing[platform] = []
            for requirement in wanted:
                try:
                    download([requirement], platform, bundle, pip_args, deps=False)
                except ReleaseError:
                    missing[platform].append(requirement)
    for requirement in sorted({r for names in missing.values() for r in names}):
        run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary=:all:", "--dest", str(bundle), *pip_args, requirement])
    return pins, missing


def write_lock(bundle: Path, wheel: Path, version: str, extras: str, pins: Mapping[str, str],
               platforms: Sequence[str], missing: Mapping[str, list[str]], tag: str) -> Path:
    """requirements.lock in pip's --require-hashes format: every file in the bundle for each
    pinned package, so one lock serves every platform the bundle was built for."""
    hashes: dict[str, list[str]] = {}
    for path in _packages(bundle):
        hashes.setdefault(_dist_name(path.name)[0], []).append(sha256(path.read_bytes()))
    own = f"{DIST_NAME}[{extras}]" if extras else DIST_NAME
    lines = [f"# {DIST_NAME} {tag}: every package the release installs, pinned with the hash "
             "of each file in this bundle",
             f"# built by tools/release.py for CPython {PYTHON[0]} on: "
             + ", ".join(f"{p} ({PLATFORMS[p]})" for p in platforms)]
    for platform in platforms:
        if missing.get(platform):
            lines.append(f"# no wheel for {platform}: {', '.join(missing[platform])} (the "
                         "sdist is in the bundle; docs/deployment.md says how they install)")
    lines.append(f"# install: {INSTALL}")
    lines.append(f"{own}=={version} \\\n    --hash=sha256:{sha256(wheel.read_bytes())}")
    for name, pinned in sorted(pins.items()):
        digests = " \\\n".join(f"    --hash=sha256:{h}" for h in sorted(hashes[name]))
        lines.append(f"{name}=={pinned} \\\n{digests}")
    lock = bundle / LOCK_NAME
    lock.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lock


# --- manifest and bundle ------------------------------------------------------------------

def manifest_bytes(*, tag: str, version: str, commit: str, epoch: int,
                   files: Mapping[str, bytes], scripts: Mapping[str, str],
                   bundle_files: Iterable[tuple[str, Path]], platforms: Sequence[str],
                   missing: Mapping[str, list[str]]) -> bytes:
    """The manifest: the digest of every program file the wheel installs (sorted by path:
    the order of the seeded HMAC) and of every file in the bundle."""
    body = {
        "format": MANIFEST_FORMAT, "project": DIST_NAME, "release": tag, "version": version,
        "source_commit": commit, "source_date_epoch": epoch, "python": PYTHON[0],
        "platforms": list(platforms), "no_wheel": {p: n for p, n in missing.items() if n},
        "digests": {
            "file": "SHA-256 of the file's bytes (sha256sum)",
            "seeded": "HMAC-SHA256 keyed by the seed's bytes over every listed file's bytes "
                      "concatenated in this list's order (openssl dgst -sha256 -mac HMAC "
                      "-macopt hexkey:SEED)",
            "root": "paths are relative to the directory holding the packages "
                    "(the virtualenv's site-packages)"},
        "console_scripts": dict(sorted(scripts.items())),
        "files": [{"path": p, "sha256": sha256(files[p]), "size": len(files[p])}
                  for p in sorted(files)],
        "bundle": [{"name": name, "sha256": sha256(path.read_bytes())}
                   for name, path in sorted(bundle_files)],
    }
    return (json.dumps(body, indent=1, sort_keys=False) + "\n").encode()


def _tree(bundle: Path) -> list[tuple[str, Path]]:
    """Every file in the bundle, by its '/'-separated path in it, sorted."""
    return sorted((p.relative_to(bundle).as_posix(), p) for p in bundle.rglob("*")
                  if p.is_file())


def sign(key: object, body: bytes) -> bytes:
    return key.sign(body)  # type: ignore[attr-defined, no-any-return]


def write_tarball(bundle: Path, out: Path, epoch: int) -> None:
    """The bundle as one .tar.gz with sorted members, the commit's time, root's owner:
    byte-identical from two builds."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in [bundle, *sorted(bundle.rglob("*"))]:
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(bundle.parent)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "root", "root"
            info.mode = 0o755 if path.is_dir() else 0o644
            if path.is_file():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    with out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                              filename="") as gz:
        gz.write(buffer.getvalue())


def build(*, repo: str, tag: str, out: Path, key_path: Path, platforms: Sequence[str],
          extras: str, pip_args: Sequence[str], build_env_dir: Path | None) -> dict[str, str]:
    """Build the release; returns {file name: sha256} of what it wrote."""
    key = _load_private_key(key_path)
    for platform in platforms:
        if platform not in PLATFORMS:
            raise ReleaseError(f"--platform {platform!r}: allowed: {', '.join(PLATFORMS)}")
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"--out {out}: not empty; allowed: a new or empty directory")
    bundle = out / "bundle"
    bundle.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="tabled-release-") as tmp:
        src = Path(tmp) / "src"
        commit, epoch = clone(repo, tag, src)
        version = check_version(src, tag)
        python = build_env(build_env_dir or Path(tmp) / "build-env")
        wheel = build_wheel(src, python, epoch, bundle)
        for name in TREE_FILES:
            if (src / name).is_dir():
                shutil.copytree(src / name, bundle / name)
            elif (src / name).exists():
                shutil.copy(src / name, bundle / name)
    files, scripts, _ = wheel_contents(wheel)
    pins, missing = gather(wheel, extras, platforms, bundle, pip_args)
    write_lock(bundle, wheel, version, extras, pins, platforms, missing, tag)
    (bundle / PUBLIC_KEY_NAME).write_bytes(_public_pem(key))
    body = manifest_bytes(tag=tag, version=version, commit=commit, epoch=epoch, files=files,
                          scripts=scripts, bundle_files=_tree(bundle),
                          platforms=platforms, missing=missing)
    (bundle / MANIFEST_NAME).write_bytes(body)
    (bundle / (MANIFEST_NAME + SIGNATURE_SUFFIX)).write_bytes(sign(key, body))
    tarball = out / f"{DIST_NAME}-{tag}-bundle.tar.gz"
    write_tarball(bundle, tarball, epoch)
    written = {f"bundle/{name}": sha256(path.read_bytes()) for name, path in _tree(bundle)}
    written[tarball.name] = sha256(tarball.read_bytes())
    return written


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """The module's docstring as written; an option's help broken as tablectl's is (at 80
    columns '--pip-arg=--extra-index-url=...' came out as '--extra-' and 'index-url=...' on
    the next line, which a vendor copying it pasted as two words)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__,
                                     formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("keygen", help="make the vendor's Ed25519 release key pair (once)",
                         formatter_class=_HelpFormatter)
    gen.add_argument("--out", required=True, type=Path, help="a directory only you can read")
    b = sub.add_parser("build", help="build the release of a tag", formatter_class=_HelpFormatter)
    b.add_argument("--tag", required=True, help="the release's tag, v<version>, e.g. v0.2.0")
    b.add_argument("--out", required=True, type=Path, help="a new directory for the release")
    b.add_argument("--key", required=True, type=Path, help="the vendor's private release key")
    b.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this "
                   "one; only the tag's commit is used, never the working tree)")
    b.add_argument("--platform", action="append", dest="platforms",
                   help=f"a target platform ({', '.join(PLATFORMS)}); repeatable; default: "
                        "aarch64 and armv7l")
    b.add_argument("--extras", default="pi", help="the project's extras to bundle (default: "
                   "pi); '' for none")
    b.add_argument("--pip-arg", action="append", default=[], help="passed to 'pip download', "
                   "e.g. --pip-arg=--extra-index-url=URL for the URL "
                   "https://www.piwheels.org/simple (repeatable)")
    b.add_argument("--build-env", type=Path, help="reuse this build virtualenv (made on "
                   "first use with tools/build-requirements.txt)")
    args = parser.parse_args(argv)
    try:
        if args.command == "keygen":
            private, public = keygen(args.out)
            print(f"private key: {private} (keep it offline)\npublic key:  {public}")
            return 0
        written = build(repo=args.repo, tag=args.tag, out=args.out, key_path=args.key,
                        platforms=args.platforms or ["aarch64", "armv7l"], extras=args.extras,
                        pip_args=args.pip_arg, build_env_dir=args.build_env)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name, digest in written.items():
        print(f"{digest}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
