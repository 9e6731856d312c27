# Sourced by ./run-simulated-table and ./run-tests: make .venv and install the
# project into it, once. A second run reuses it unless pyproject.toml changed.
# Usage: ensure_venv EXTRA   (EXTRA is "" or "test")

ensure_venv() {
    local extra="$1" python="${PYTHON:-python3}"
    local spec="." stamp
    [ -n "$extra" ] && spec=".[$extra]"
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "error: Python 3.11 or newer is required as '$python' (set PYTHON=/path/to/python3.11)" >&2
        return 1
    fi
    if [ ! -x .venv/bin/python ]; then
        echo "setting up .venv (first run only)..." >&2
        if ! "$python" -m venv .venv 2>/dev/null; then
            # Debian and Raspberry Pi OS ship python3 without ensurepip unless
            # python3-venv is installed; build the venv without pip and fetch
            # pip's wheel from PyPI instead.
            rm -rf .venv
            "$python" -m venv --without-pip .venv
            .venv/bin/python scripts/bootstrap_pip.py
        fi
    fi
    # One stamp per extra, named after pyproject.toml's hash: an edit reinstalls, and
    # the test install (a superset) also serves the plain one.
    local digest
    digest=$(sha256sum pyproject.toml | cut -c1-16)
    stamp=".venv/.installed-${extra:-base}-$digest"
    if [ -z "$extra" ] && [ -f ".venv/.installed-test-$digest" ]; then
        stamp=".venv/.installed-test-$digest"
    fi
    if [ ! -f "$stamp" ]; then
        echo "installing $spec into .venv..." >&2
        # pip's build chatter goes to a log; it is shown only if the install fails.
        if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
               && .venv/bin/python -m pip install --disable-pip-version-check -e "$spec"; \
             } >.venv/install.log 2>&1; then
            cat .venv/install.log >&2
            echo "error: installing $spec failed (full log above, also in .venv/install.log)" >&2
            return 1
        fi
        find .venv -maxdepth 1 -name '.installed-*' ! -name "*-$digest" -delete
        touch "$stamp"
    fi
}
