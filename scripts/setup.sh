#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine (Go toolchain and
# Python 3 with pip already present). Idempotent: each step is skipped when
# already satisfied, so re-running it costs seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
BEAM_VERSION=2.77.0
# What Beam's own PrismRunnerTest (run by validates/) imports from the
# wheel's `test` extra, with that extra's version bounds; the rest of the
# extra (databases, testcontainers, ML libraries) is not needed.
BEAM_TEST_DEPS=("parameterized>=0.7.1,<0.10.0" "mock>=1.0.1,<6.0.0"
  "pyhamcrest>=1.9,!=1.10.0,<3.0.0" "tenacity>=8.0.0,<10")

if ! command -v go >/dev/null; then
  echo "setup: no Go toolchain on PATH (go.mod wants $(awk '/^go /{print $2}' go.mod))" >&2
  exit 1
fi

# Fills the module cache; a no-op when it is warm.
echo "setup: go mod download"
go mod download

# Each check imports the module, so a broken install counts as missing.
python_ok() {
  "$PYTHON" - <<PY 2>/dev/null
import apache_beam, pytest, pytest_timeout
assert apache_beam.__version__ == "$BEAM_VERSION", apache_beam.__version__
PY
}

if python_ok; then
  echo "setup: apache-beam==$BEAM_VERSION, pytest, pytest-timeout already installed"
else
  echo "setup: pip install apache-beam==$BEAM_VERSION pytest pytest-timeout"
  # CI runs as root on a throwaway machine: silence pip's root warning and
  # allow installing into a distro-managed Python if that is what we have.
  PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 \
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input \
    "apache-beam==$BEAM_VERSION" pytest pytest-timeout
  python_ok || { echo "setup: Python packages still not importable" >&2; exit 1; }
fi

# What Beam's cross-language tests import: Python's expansion services
# (DataframeTransform needs pandas; the test expansion service, sklearn and
# bs4), with the bounds of the wheel's dataframe and test extras.
XLANG_DEPS=("pandas>=1.4.3,!=1.5.0,!=1.5.1,<2.4" "scikit-learn>=0.20.0,<1.8.0" "beautifulsoup4>=4.9.0,<5")

xlang_ok() {
  "$PYTHON" -c "import pandas, sklearn, bs4" 2>/dev/null
}

if xlang_ok; then
  echo "setup: pandas, scikit-learn, beautifulsoup4 already installed"
else
  echo "setup: pip install ${XLANG_DEPS[*]}"
  PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 \
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input \
    "${XLANG_DEPS[@]}"
  xlang_ok || { echo "setup: pandas, scikit-learn, beautifulsoup4 still not importable" >&2; exit 1; }
fi

beam_tests_ok() {
  "$PYTHON" -c "import parameterized, mock, hamcrest, tenacity" 2>/dev/null
}

if beam_tests_ok; then
  echo "setup: Beam's test dependencies already installed"
else
  echo "setup: pip install ${BEAM_TEST_DEPS[*]}"
  PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 \
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input \
    "${BEAM_TEST_DEPS[@]}"
  beam_tests_ok || { echo "setup: Beam's test dependencies still not importable" >&2; exit 1; }
fi

# Headless Chromium drives the web UI test (runner/web). Debian's package;
# the test fails, rather than skips, without it.
if [ -x /usr/bin/chromium ]; then
  echo "setup: chromium already installed"
elif command -v apt-get >/dev/null; then
  echo "setup: apt-get install chromium"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  [ -x /usr/bin/chromium ] || { echo "setup: chromium did not install" >&2; exit 1; }
else
  echo "setup: no /usr/bin/chromium and no apt-get: install Chromium and set \$CHROMIUM for the web UI test" >&2
  exit 1
fi
