package org.beamrunner.validates;

import java.util.Collections;
import org.apache.beam.sdk.PipelineRunner;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsRegistrar;
import org.apache.beam.sdk.runners.PipelineRunnerRegistrar;

/**
 * Makes --beamRunnerBinary and friends parseable and --runner=TestBeamRunner resolvable (listed
 * in META-INF/services, so PipelineOptionsFactory finds it).
 */
public class Registrar implements PipelineOptionsRegistrar, PipelineRunnerRegistrar {
  @Override
  public Iterable<Class<? extends PipelineOptions>> getPipelineOptions() {
    return Collections.singletonList(TestBeamRunnerOptions.class);
  }

  @Override
  public Iterable<Class<? extends PipelineRunner<?>>> getPipelineRunners() {
    return Collections.singletonList(TestBeamRunner.class);
  }
}
