# `make test` is what CI runs (.ci/run): setup, unit tests, then Beam's
# ValidatesRunner suites against the job server (see validates/).
GO ?= go
WORK ?= .work/validates
# Extra harness flags, e.g. VALIDATES_FLAGS="-also 'TestTimers.*'".
VALIDATES_FLAGS ?=

.PHONY: test setup unit validates run

test: setup
	$(GO) test ./...
	$(MAKE) --no-print-directory validates

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
