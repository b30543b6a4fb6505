"""Python jobs on the SDK's default environment, its container image.

The job server runs Beam's own SDK images as local SDK worker processes
when no Docker daemon answers (as on this machine and CI), installing the
job's requirements the way the image's boot would; any other image fails
the job at once, naming it. Each job runs as a script in a subprocess: its
DoFns are pickled from __main__, so the worker processes, which do not see
this test module, can load them.
"""
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings

import pytest
from outputs import read_lines

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(HERE, "envjobs")
timeout = pytest.mark.timeout(300, method="thread")
# The job server's line when a job ends DONE (runner/jobs/lifecycle.go).
JOB_DONE = re.compile(r'msg="job ended".* state=DONE')


def run_job(script, job_endpoint, *args, limit=240):
    """Runs a job script; if it outlives the limit, fails with its threads' stacks."""
    cmd = [sys.executable, os.path.join(JOBS, script), "--runner=PortableRunner",
           f"--job_endpoint={job_endpoint}", *args]
    # faulthandler dumps every thread's stack on SIGABRT: a hung client then
    # says where it waits.
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"{script} still running after {limit}s; its stacks:\n"
                        f"{err[-8000:]}\nstdout:\n{out[-2000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def docker_answers():
    try:
        return subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@timeout
def test_requirements_file(job_endpoint, tmp_path):
    # Without this the job would prove nothing about the workers' installs.
    assert importlib.util.find_spec("inflection") is None, \
        "inflection is installed here; the test needs a package only the job's requirements provide"
    out = str(tmp_path / "out")
    res = run_job("requirements_job.py", job_endpoint, f"--output={out}",
                  "--requirements_file=" + os.path.join(JOBS, "requirements.txt"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(read_lines(out)) == ["BeamRunner", "DeviceType", "FooBar"]


@timeout
def test_default_environment_uses_worker_processes(job_endpoint, tmp_path):
    out = str(tmp_path / "out")
    res = run_job("pids_job.py", job_endpoint, f"--output={out}", "--elements=400")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    lines = read_lines(out)
    elements = sorted(int(line.split()[0]) for line in lines)
    assert elements == list(range(400))
    pids = {line.split()[1] for line in lines}
    assert str(os.getpid()) not in pids, "elements ran in the submitting process"
    if (os.cpu_count() or 1) > 1:
        # CPU-bound elements split over the workers: one per core.
        assert len(pids) > 1, f"all elements ran in one worker process {pids}"


@timeout
def test_foreign_image_without_docker_fails_fast(job_endpoint, tmp_path):
    assert not docker_answers(), "a Docker daemon answers here: the image would be pulled, not refused"
    # Not one of Beam's SDK images, which run as local workers instead.
    image = "example.com/custom/beam_sdk:1.0"
    start = time.monotonic()
    res = run_job("pids_job.py", job_endpoint, f"--output={tmp_path / 'out'}", "--elements=4",
                  "--environment_type=DOCKER", f"--environment_config={image}", limit=120)
    # The job fails within 10 s of its start; the client's own start-up
    # (importing Beam, staging) comes on top.
    elapsed = time.monotonic() - start
    assert res.returncode != 0
    err = res.stdout + res.stderr
    assert image in err and "needs Docker" in err, err[-3000:]
    assert elapsed < 30, f"failed after {elapsed:.1f}s"


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def start_server(cwd, log):
    """Starts the job server binary in cwd, as a user would there; returns
    the process and its Job API endpoint once it accepts connections."""
    binary = os.environ.get("BEAM_RUNNER_BIN")
    if not binary:
        pytest.fail("BEAM_RUNNER_BIN is not set (the job server binary validates built)")
    port = free_port()
    proc = subprocess.Popen([binary, f"--job_port={port}", "--state_dir=none", "--log_kind=text"],
                            cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the job server exited with {proc.returncode} before it listened")
        try:
            socket.create_connection(("localhost", port), timeout=1).close()
            return proc, f"localhost:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("the job server did not listen within 60 s")


def wordcount(cwd, *args, server_log=None, limit=240):
    """Runs Beam's wordcount in cwd with relative --input and --output.

    A client still running at the limit is aborted for its threads' stacks.
    If server_log shows the job ended DONE by then, the hang is the client's
    own exit (grpcio can deadlock finalizing a channel, grpc/grpc#36927):
    it is reported as a warning with the stacks, and the job's output is
    still checked; otherwise the test fails with both sides' logs."""
    cmd = [sys.executable, "-m", "apache_beam.examples.wordcount",
           "--input=words.txt", "--output=out/wc", *args]
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
            return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
    log = server_log.read_text() if server_log else ""
    if JOB_DONE.search(log):
        warnings.warn(f"wordcount's client still ran {limit}s after its job ended DONE; "
                      f"aborted; its stacks:\n{err[-6000:]}")
        return subprocess.CompletedProcess(cmd, 0, out, err)
    pytest.fail(f"wordcount still running after {limit}s; its stacks:\n{err[-6000:]}\n"
                f"the server's log ends:\n{log[-4000:]}")


@timeout
def test_relative_paths_resolve_in_the_servers_directory(tmp_path):
    """Local SDK workers run in the job server's working directory: a job
    with relative paths, submitted from the folder the server was started
    in with the SDK's default environment, reads and writes there, as the
    DirectRunner does; the workers leave nothing else there."""
    readme = os.path.join(HERE, "..", "..", "README.md")
    here, direct = tmp_path / "here", tmp_path / "direct"
    for d in (here, direct):
        d.mkdir()
        shutil.copy(readme, d / "words.txt")
    res = wordcount(direct, "--runner=DirectRunner")
    assert res.returncode == 0, res.stderr[-3000:]
    want = sorted(read_lines(str(direct / "out" / "wc")))
    assert len(want) > 100, f"the DirectRunner counted only {len(want)} words"
    with open(tmp_path / "server.log", "w") as log:
        proc, endpoint = start_server(here, log)
        try:
            res = wordcount(here, "--runner=PortableRunner", f"--job_endpoint={endpoint}",
                            server_log=tmp_path / "server.log", limit=180)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert res.returncode == 0, res.stderr[-3000:]
    server_log = (tmp_path / "server.log").read_text()
    assert "runs as local SDK worker processes" in server_log, server_log[-3000:]
    assert sorted(read_lines(str(here / "out" / "wc"))) == want
    assert sorted(os.listdir(here)) == ["out", "words.txt"], os.listdir(here)
