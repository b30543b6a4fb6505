package org.beamrunner.validates;

import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.testing.TestPipelineOptions;

/**
 * Options of {@link TestBeamRunner}, besides the portable ones (jobEndpoint, environment) and
 * TestPipelineOptions' testTimeoutSeconds, after which a job is cancelled and its test failed.
 */
public interface TestBeamRunnerOptions extends PortablePipelineOptions, TestPipelineOptions {
  @Description(
      "Job server binary (beam-runner, or Prism: both take --job_port) started on a free port "
          + "for each pipeline and stopped after it, as TestPrismRunner does. Unset or empty: "
          + "submit to --jobEndpoint.")
  String getBeamRunnerBinary();

  void setBeamRunnerBinary(String value);

  @Description("Extra space-separated flags for the server started from --beamRunnerBinary.")
  @Default.String("")
  String getBeamRunnerArgs();

  void setBeamRunnerArgs(String value);

  @Description(
      "Directory for the logs of servers started from --beamRunnerBinary, one file per "
          + "pipeline; unset or empty discards them.")
  String getBeamRunnerLogDir();

  void setBeamRunnerLogDir(String value);
}
