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

# pip_install WHAT CHECK PKG...: installs PKGs unless CHECK (a function)
# already succeeds, then requires it to. CI runs as root on a throwaway
# machine: pip's root warning is silenced, and installing into a
# distro-managed Python allowed, if that is what we have.
pip_install() {
  local what=$1 check=$2
  shift 2
  if "$check"; then
    echo "setup: $what already installed"
    return
  fi
  echo "setup: pip install $*"
  PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 \
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input "$@"
  "$check" || { echo "setup: $what still not importable" >&2; exit 1; }
}

# Each check imports the module, so a broken install counts as missing.
python_ok() {
  "$PYTHON" - <<PY 2>/dev/null
import apache_beam, pytest, pytest_timeout
assert apache_beam.__version__ == "$BEAM_VERSION", apache_beam.__version__
PY
}

pip_install "apache-beam==$BEAM_VERSION, pytest, pytest-timeout" python_ok \
  "apache-beam==$BEAM_VERSION" pytest pytest-timeout

# What Beam's cross-language tests import: Python's expansion services
# (DataframeTransform needs pandas; the test expansion service, sklearn and
# bs4), with the bounds of the wheel's dataframe and test extras.
xlang_ok() {
  "$PYTHON" -c "import pandas, sklearn, bs4" 2>/dev/null
}
pip_install "pandas, scikit-learn, beautifulsoup4" xlang_ok \
  "pandas>=1.4.3,!=1.5.0,!=1.5.1,<2.4" "scikit-learn>=0.20.0,<1.8.0" "beautifulsoup4>=4.9.0,<5"

beam_tests_ok() {
  "$PYTHON" -c "import parameterized, mock, hamcrest, tenacity" 2>/dev/null
}
pip_install "Beam's test dependencies" beam_tests_ok "${BEAM_TEST_DEPS[@]}"

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

# Beam's Java ValidatesRunner suite (validates/java): a JDK and Maven from
# Debian if missing, then every artifact the suite needs in ~/.m2, so that
# `validates` runs Maven offline. Resolving = compiling the client and
# running Surefire on no test (which fetches its JUnit provider); skipped
# when that already works offline.
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if command -v java >/dev/null && command -v mvn >/dev/null; then
  echo "setup: java and mvn already installed"
elif command -v apt-get >/dev/null; then
  echo "setup: apt-get install default-jdk-headless maven"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq default-jdk-headless maven >/dev/null
else
  echo "setup: no java/mvn and no apt-get: install a JDK (17+) and Maven" >&2
  exit 1
fi
java_suite_ok() {
  mvn -B -q "$@" -f validates/java/pom.xml test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false \
    -DbuildDir="$PWD/.work/setup-java" >/dev/null 2>&1
}
if java_suite_ok -o; then
  echo "setup: Maven artifacts of validates/java already in ~/.m2"
else
  echo "setup: mvn: fetching the artifacts of validates/java"
  java_suite_ok || { echo "setup: mvn could not resolve validates/java (run it without -q to see why)" >&2; exit 1; }
fi
