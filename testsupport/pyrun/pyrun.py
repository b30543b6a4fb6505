"""Runs a Python Beam client (a script path, or -m MODULE) with its
arguments and leaves with os._exit once it returns, with its exit status.

Skipping the interpreter's finalization is the point: grpcio's stream
finalizer (_MultiThreadedRendezvous.__del__) can wait for good on a lock
that a daemon thread of the client (the channel's spin thread, Beam's
message reader) held when finalization froze it, so a client whose job
ended DONE hangs at exit now and then."""
import os
import runpy
import sys
import traceback


def exit_status(e):
  """The status of a SystemExit, as the interpreter would exit with it."""
  if e.code is None:
    return 0
  if isinstance(e.code, int):
    return e.code
  print(e.code, file=sys.stderr)
  return 1


def main():
  if sys.argv[1] == '-m':
    module = sys.argv[2]
    sys.argv = [module] + sys.argv[3:]
    run = lambda: runpy.run_module(module, run_name='__main__', alter_sys=True)
  else:
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    # A script's folder is first on its path, as when run directly.
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    run = lambda: runpy.run_path(script, run_name='__main__')
  status = 0
  try:
    run()
  except SystemExit as e:
    status = exit_status(e)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
    status = 1
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
  main()
