package org.beamrunner.validates;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A job server started from a binary on a free --job_port, stopped on close: one per pipeline,
 * as TestPrismRunner starts Prism. Clients wait for it to answer (gRPC wait-for-ready), so start
 * does not poll.
 */
final class JobServerProcess implements AutoCloseable {
  private static final long STOP_GRACE_SECONDS = 10;

  private final Process process;
  private final String endpoint;

  private JobServerProcess(Process process, String endpoint) {
    this.process = process;
    this.endpoint = endpoint;
  }

  /** Starts binary with --job_port=PORT and the extra flags; output goes to logDir or nowhere. */
  static JobServerProcess start(String binary, String extraArgs, String logDir, String name)
      throws IOException {
    if (!new File(binary).canExecute()) {
      throw new IOException("--beamRunnerBinary " + binary + " is not an executable file");
    }
    int port = freePort();
    List<String> cmd = new ArrayList<>();
    cmd.add(binary);
    cmd.add("--job_port=" + port);
    if (extraArgs != null && !extraArgs.isBlank()) {
      cmd.addAll(Arrays.asList(extraArgs.trim().split("\\s+")));
    }
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    if (logDir == null || logDir.isEmpty()) {
      pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    } else {
      File dir = new File(logDir);
      dir.mkdirs();
      pb.redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir, logName(name, port))));
    }
    return new JobServerProcess(pb.start(), "localhost:" + port);
  }

  String endpoint() {
    return endpoint;
  }

  /** Fails fast when the server died before or while its job ran. */
  void checkAlive() {
    if (!process.isAlive()) {
      throw new IllegalStateException(
          "job server at " + endpoint + " exited with status " + process.exitValue());
    }
  }

  /** SIGTERM, then SIGKILL after a grace period. */
  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(STOP_GRACE_SECONDS, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
    }
  }

  private static String logName(String name, int port) {
    return name.replaceAll("[^A-Za-z0-9_.$-]", "_") + "-" + port + ".log";
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
