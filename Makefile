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
	./internal/serverproc/...

.PHONY: test setup unit race faults multihost xlang validates run

test: setup
	$(GO) test ./...
	$(MAKE) --no-print-directory race
	$(MAKE) --no-print-directory faults
	$(MAKE) --no-print-directory multihost
	$(MAKE) --no-print-directory xlang
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

setup:
	scripts/setup.sh

unit:
	$(GO) test ./...

# Built, not `go run`, so the harness's exit status reaches make unchanged.
validates:
	$(GO) build -o $(WORK)/validates ./validates/cmd/validates
	$(WORK)/validates $(VALIDATES_FLAGS)

run:
	$(GO) run ./cmd/beam-runner --job_port=8073
