#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine (Go toolchain and
# Python 3 with pip already present). Idempotent: each step is skipped when
# already satisfied, so re-running it costs seconds. Three lanes run side
# by side, each mostly waiting on a registry: Go modules, Python packages,
# and the system packages then Maven (apt's lock allows one apt at a time).
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
go_lane() {
  echo "setup: go mod download"
  go mod download
}

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

python_lane() {
  pip_install "apache-beam==$BEAM_VERSION, pytest, pytest-timeout" python_ok \
    "apache-beam==$BEAM_VERSION" pytest pytest-timeout
  pip_install "pandas, scikit-learn, beautifulsoup4" xlang_ok \
    "pandas>=1.4.3,!=1.5.0,!=1.5.1,<2.4" "scikit-learn>=0.20.0,<1.8.0" "beautifulsoup4>=4.9.0,<5"
  pip_install "Beam's test dependencies" beam_tests_ok "${BEAM_TEST_DEPS[@]}"
}

# What Beam's cross-language tests import: Python's expansion services
# (DataframeTransform needs pandas; the test expansion service, sklearn and
# bs4), with the bounds of the wheel's dataframe and test extras.
xlang_ok() {
  "$PYTHON" -c "import pandas, sklearn, bs4" 2>/dev/null
}

beam_tests_ok() {
  "$PYTHON" -c "import parameterized, mock, hamcrest, tenacity" 2>/dev/null
}

# Headless Chromium drives the web UI test (runner/web). Debian's package;
# the test fails, rather than skips, without it.
chromium_setup() {
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
}

# --- Java SDK workers (worker/, validates/javaenv) ---------------------------
# A JDK and Maven, then into the local Maven repository: Beam's Java SDK
# 2.73.0 with what the javaenv test pipeline needs, and the Java harness
# with the jars Beam's Java SDK image carries beside it, where the job
# server finds them for local Java workers. A pom resolves offline when
# all of it is there already.
java_setup() {
  if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
    if ! command -v apt-get >/dev/null; then
      echo "setup: no javac or mvn, and no apt-get: install a JDK (17+) and Maven" >&2
      exit 1
    fi
    echo "setup: apt-get install openjdk-17-jdk-headless maven"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
  fi
  local pom
  for pom in validates/javaenv/testdata/pom.xml validates/javaenv/testdata/harness.xml; do
    if mvn -o -B -q -f "$pom" dependency:resolve >/dev/null 2>&1; then
      echo "setup: $pom already resolved"
      continue
    fi
    echo "setup: mvn dependency:resolve -f $pom"
    mvn -B -q -f "$pom" dependency:resolve || { echo "setup: could not resolve $pom" >&2; exit 1; }
  done
}

# --- The cross-language checks (validates/xlang) ----------------------------
# The Java expansion service's and the Kafka broker's jars, resolved by
# Maven from scripts/java/*/pom.xml into .work/java/*/lib (the JDK and
# Maven come from java_setup above). A stamp holds the POM's checksum: an
# unchanged POM is not resolved again.

# java_libs POM DIR: copies the POM's runtime dependencies into DIR/lib.
java_libs() {
  local pom=$1 dir=$2 sum
  sum=$(sha256sum "$pom" | cut -d' ' -f1)
  if [ -f "$dir/lib.sha256" ] && [ "$(cat "$dir/lib.sha256")" = "$sum" ]; then
    echo "setup: $dir/lib already resolved"
    return
  fi
  echo "setup: mvn dependency:copy-dependencies -f $pom"
  rm -rf "$dir/lib" "$dir/lib.tmp"
  mkdir -p "$dir"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$PWD/$dir/lib.tmp"
  mv "$dir/lib.tmp" "$dir/lib"
  echo "$sum" >"$dir/lib.sha256"
}

# Beam's Java ValidatesRunner suite (validates/java): every artifact the
# suite needs in ~/.m2 (the JDK and Maven come from java_setup above), so
# that `validates` runs Maven offline. Resolving = compiling the client and
# running Surefire on no test (which fetches its JUnit provider); skipped
# when that already works offline.
java_suite_ok() {
  mvn -B -q "$@" -f validates/java/pom.xml test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false \
    -DbuildDir="$PWD/.work/setup-java" >/dev/null 2>&1
}

system_lane() {
  chromium_setup
  java_setup
  java_libs scripts/java/expansion-service/pom.xml .work/java/expansion
  java_libs scripts/java/kafka-broker/pom.xml .work/java/kafka
  if java_suite_ok -o; then
    echo "setup: Maven artifacts of validates/java already in ~/.m2"
  else
    echo "setup: mvn: fetching the artifacts of validates/java"
    java_suite_ok || { echo "setup: mvn could not resolve validates/java (run it without -q to see why)" >&2; exit 1; }
  fi
}

# --- The lanes ----------------------------------------------------------------
# Each lane's output goes to its own log, printed whole when the lane ends,
# so the lines of one lane stay together. Any lane failing fails setup.
logs=.work/setup-logs
mkdir -p "$logs"
names=(go python system)
pids=()
for name in "${names[@]}"; do
  ( set -euo pipefail; "${name}_lane" ) >"$logs/$name.log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!names[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed+=("${names[$i]}")
  fi
  cat "$logs/${names[$i]}.log"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "setup: failed: ${failed[*]} (logs in $logs)" >&2
  exit 1
fi
