"""Floor-supervisor PINs, stored only as salted PBKDF2-SHA256 hashes.

Format: `pbkdf2_sha256$<iterations>$<salt hex>$<hash hex>`; the configuration
file's `[supervisors]` table maps a supervisor's name to such a hash.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

# OWASP's 2023 guidance for PBKDF2-HMAC-SHA256 is 600,000 iterations; a Pi 4
# checks one PIN in about a second at that cost, acceptable for a jackpot
# validation that happens a few times a night.
ITERATIONS = 600_000


def hash_pin(pin: str, *, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    if not (pin.isdigit() and 4 <= len(pin) <= 12):
        raise ValueError("a PIN is 4 to 12 digits")
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def verify_pin(pin: str, stored: str) -> bool:
    try:
        scheme, iterations, salt_hex, digest_hex = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        digest = hashlib.pbkdf2_hmac("sha256", pin.encode(), bytes.fromhex(salt_hex),
                                     int(iterations))
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), digest_hex)


def authorise(supervisors: Mapping[str, str], name: str, pin: str) -> bool:
    stored = supervisors.get(name)
    # Compare against a dummy hash when the name is unknown so timing does not reveal names.
    return verify_pin(pin, stored) if stored else (verify_pin(pin, _DUMMY) and False)


_DUMMY = hash_pin("0000", iterations=1000, salt=b"\0" * 16)
