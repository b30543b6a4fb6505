// Package xlang runs Java transforms inside Python and Go pipelines
// (cross-language) against the beam-runner binary, with no Docker: a Java
// expansion service assembled by scripts/setup.sh from Beam's served jars
// (.work/java/expansion/lib), and a real Kafka broker, single node in
// KRaft mode (.work/java/kafka/lib), that the test starts and stops.
//
//   - Python's GenerateSequence (a Java source), exact elements asserted;
//   - a streaming Python pipeline: ReadFromKafka from a topic the test
//     fills, fixed windows over the records' create times, a count per key,
//     WriteToKafka to a second topic; the counts a real consumer reads back
//     are exact, and a drain ends the job;
//   - Beam's Go TestKafkaIO_BasicReadWrite (kafkaio.Write, then kafkaio.Read
//     with passert), unmodified.
//
// Beside them (TestKafkaExactlyOnce, eos_test.go), a Java streaming job
// (KafkaEosCounts.java: KafkaIO read, fixed windows, a count per key,
// KafkaIO's exactly-once write) on local Java workers, its server
// SIGKILLed twice and restarted on the same --state_dir, its counts read
// back with read_committed: each exactly once (docs/durability.md).
//
// TestKafkaBackPressure (backpressure_test.go) preloads a topic with 2
// million records and runs a Python pipeline whose one stage is over ten
// times slower than KafkaIO's read, sampling the server's RSS and store:
// flat with flow control, growing without it (docs/scaling.md,
// "Back-pressure, measured"), then DS2 adding workers.
//
// Each runs against the expansion service started two ways: with
// --alsoStartLoopbackWorker, whose environment is an anyof of Java's SDK
// image and the service's own worker pool (EXTERNAL), which the runner
// prefers; and as it comes, whose environment is Java's SDK image, which
// the runner runs as local JVMs.
//
// The check is behind the "xlang" build tag so plain `go test ./...` does
// not start Java; `make test` runs it:
//
//	go test -tags xlang ./validates/xlang
//
// BEAM_RUNNER_BIN names a built server (default: built from ./cmd/beam-runner);
// XLANG_LOGDIR keeps the servers' logs.
package xlang
