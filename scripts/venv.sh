# Sourced by ./run-simulated-table, ./run-pit and ./run-tests: make .venv and install the
# project into it, once. A second run reuses it unless pyproject.toml changed.
# Usage: ensure_venv EXTRA   (EXTRA is "", "simulated" or "test")

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
    # the test install (a superset: tests/test_quickstart_installs.py) also serves the
    # plain one and the simulated tables'.
    local digest
    digest=$(sha256sum pyproject.toml | cut -c1-16)
    stamp=".venv/.installed-${extra:-base}-$digest"
    if [ "$extra" != test ] && [ -f ".venv/.installed-test-$digest" ]; then
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

# The browser tests (hil/test_display_browser.py) drive Debian's headless Chromium.
# When it is missing and we may install system packages (root with apt-get, as in CI
# containers), install it once, quietly, with a log; otherwise say why the browser
# tests will skip (outside CI) or fail (under CI=true).
ensure_chromium() {
    local log=".venv/apt-chromium.log"
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing chromium for the browser tests (apt-get, log in $log)..." >&2
        # With a Chinese font: the scoreboard's bilingual labels (docs/display.md).
        if { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
               chromium fonts-wqy-zenhei; } >"$log" 2>&1; then
            return 0
        fi
        echo "warning: installing chromium failed (see $log); the browser tests cannot run" >&2
        return 0
    fi
    echo "note: chromium is not installed and this is not root with apt-get; the browser" \
         "tests will skip (fail under CI=true). Install it with: sudo apt-get install chromium" \
         "fonts-wqy-zenhei" >&2
}
