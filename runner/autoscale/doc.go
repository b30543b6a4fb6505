// Package autoscale measures each fused stage's rates and sizes a job's
// SDK workers from them with DS2 (Kalavri et al., OSDI 2018): one pass
// over the stage graph in topological order turns source rates and
// backlogs into each stage's target rate, its needed busy time and each
// environment's workers. It is pure: the caller passes every time (in
// milliseconds of its own clock) and every measurement; nothing here reads
// a clock, starts a goroutine or does I/O (boundary_test.go).
//
// # Parts
//
//   - Window (window.go, rates.go): one stage's sliding window of samples
//     (one per finished bundle or progress report) and the rates derived
//     from it: DS2's true processing and output rates, the observed rate,
//     Flink's busy/idle/back-pressured milliseconds per second, and the
//     guard against under-reported busy time.
//   - Policy (policy.go, graph.go, stream.go, batch.go): Decide, the DS2
//     pass over the stage graph, streaming (target rates) or batch
//     (remaining work).
//   - Stability (stability.go, backlog.go, state.go): what turns DS2's
//     need into a worker count without flip-flops, with the policy's
//     memory (State) kept as plain data so the driver can snapshot it.
//   - Decision (decision.go): the outcome, with its reasons and the rates
//     it used, as a job message.
//
// The driver feeds the windows (runner/execute/rates.go) and, with
// --autoscaling=ds2, runs Decide every interval and applies its decisions
// (runner/execute/autoscaling.go, runner/workers/scale.go):
// docs/scaling.md, "Autoscaling".
package autoscale
