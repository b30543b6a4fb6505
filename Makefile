# `make test` is what CI runs (.ci/run): setup, unit tests, the race and
# fault checks, then Beam's ValidatesRunner suites against the job server
# (docs/validates/README.md).
GO ?= go
WORK ?= .work/validates
# Extra harness flags, e.g. VALIDATES_FLAGS="-also 'TestTimers.*'".
VALIDATES_FLAGS ?=

# Packages with concurrency (goroutines, mutexes), run again under the race
# detector.
RACE_PKGS = ./fnapi/... ./dataplane/... ./stateplane/... ./harness/... ./worker/... \
	./runner/execute/... ./runner/workers/... ./runner/bundleio/... ./runner/jobs/... ./runner/userstate/... \
	./runner/metrics/... ./runner/store/... ./runner/artifacts/... ./runner/server/... \
	./testsupport/serverproc/...

.PHONY: test setup warm unit race faults multihost xlang backpressure elastic validates run

# setup mostly waits on package registries: the Go test binaries compile
# meanwhile (warm), and the stages below find them in the build cache.
# Each stage says how long it took (scripts/timed), but the last: CI's last
# lines are the validates verdict, which names what failed.
test:
	@scripts/timed setup+warm $(MAKE) --no-print-directory -j2 setup warm
	@scripts/timed unit $(GO) test ./...
	@scripts/timed race $(MAKE) --no-print-directory race
	@scripts/timed faults $(MAKE) --no-print-directory faults
	@scripts/timed multihost $(MAKE) --no-print-directory multihost
	@scripts/timed xlang $(MAKE) --no-print-directory xlang
	$(MAKE) --no-print-directory validates

# The second line runs the engine's tests with its bookkeeping checks on
# (runner/engine/invariants.go).
race:
	$(GO) test -race $(RACE_PKGS)
	$(GO) test -race -tags invariants ./runner/engine/...

# Kills SDK workers during a Python job; needs the Python SDK (setup).
faults:
	$(GO) test -tags faults -timeout 20m ./validates/faults

# SDK workers on three "hosts": network namespaces whose worker pools
# are held to half a core each (docs/scaling.md); needs root, iproute2,
# cgroup v1's cpu controller and the Python SDK (setup). -v: its figures.
multihost:
	$(GO) test -tags multihost -v -count=1 -timeout 20m ./validates/multihost

# Java transforms (GenerateSequence, KafkaIO) in Python and Go pipelines,
# through a Java expansion service and a Kafka broker from the jars setup
# resolves (docs/environments.md); needs a JDK and the Python SDK (setup).
xlang:
	$(GO) test -tags xlang -count=1 -timeout 20m ./validates/xlang

# The Kafka back-pressure check of docs/scaling.md ("Back-pressure,
# measured"): about 6 minutes, too long for `test`.
backpressure:
	$(GO) test -tags 'xlang backpressure' -count=1 -timeout 20m -run TestKafkaBackPressure -v ./validates/xlang

# The elastic benchmark (docs/bench/elastic.md): DS2 sizing the workers of
# a Kafka job on network-namespace hosts while its input rate steps
# R, 2R, R/2, R (ELASTIC_STEP each, default 4m: about 20 minutes in all);
# needs root, like multihost. Records ELASTIC_OUT (.work/elastic/run.json),
# then writes the plot ELASTIC_SVG (docs/bench/elastic.svg) and prints the
# table; a sweep or constant-rate run names its own pair.
ELASTIC_OUT ?= $(CURDIR)/.work/elastic/run.json
ELASTIC_SVG ?= docs/bench/elastic.svg
elastic:
	ELASTIC_OUT=$(ELASTIC_OUT) $(GO) test -tags 'xlang elastic' -count=1 -timeout 90m -run TestElastic -v ./validates/xlang
	$(GO) run ./bench/cmd/elastic -run $(ELASTIC_OUT) -svg $(ELASTIC_SVG)

setup:
	scripts/setup.sh

# Compiles every test binary, plain and with the race detector, running no
# test; its output is shown only when a build fails.
warm:
	@mkdir -p .work
	@$(GO) test -count=1 -run '^$$' ./... >.work/warm.log 2>&1 || { cat .work/warm.log; exit 1; }
	@$(GO) test -count=1 -race -run '^$$' $(RACE_PKGS) >.work/warm-race.log 2>&1 || { cat .work/warm-race.log; exit 1; }
	@for t in faults multihost xlang; do $(GO) test -count=1 -tags $$t -run '^$$' ./validates/$$t >/dev/null || exit 1; done
	@$(GO) test -c -o .work/warm-primitives.test github.com/apache/beam/sdks/v2/go/test/integration/primitives && rm -f .work/warm-primitives.test

unit:
	$(GO) test ./...

# Built, not `go run`, so the harness's exit status reaches make unchanged.
validates:
	$(GO) build -o $(WORK)/validates ./validates/cmd/validates
	$(WORK)/validates $(VALIDATES_FLAGS)

run:
	$(GO) run ./cmd/beam-runner --job_port=8073
