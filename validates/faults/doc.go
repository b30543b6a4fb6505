// Package faults is a fault-injection check: it runs a Python batch job
// (GroupByKey, CombinePerKey, a side input) on an in-process beam-runner
// while SDK worker processes are killed with SIGKILL at random moments,
// and requires the output of a clean run. Workers come from a Python
// worker pool of its own (EXTERNAL) and from the runner itself (PROCESS);
// with one attempt per bundle the job must fail naming the signal. A job
// whose DoFn the workers cannot import must fail within 15 s with the
// worker's ModuleNotFoundError.
//
// The check is behind the "faults" build tag so plain `go test ./...`
// does not start Python; `make test` runs it:
//
//	go test -tags faults ./validates/faults
//
// FAULTS_ELEMENTS (default 300000) sizes the job, FAULTS_KILLS (default 3)
// is how many workers each faulty run kills, FAULTS_SEED fixes the kill
// times, FAULTS_LOGDIR keeps the servers' logs.
package faults
