"""``exactform`` commands run in the test process (torch, onnx and the rest are loaded once for the
suite, not once per command): the same exit code, stdout and stderr as ``python -m exactform``."""
import contextlib
import io
import os
import subprocess

from exactform.cli import main


def exactform(argv, cwd=None, **_subprocess_options) -> subprocess.CompletedProcess:
    """``subprocess.run([python, -m, exactform, *argv], capture_output=True, text=True)``, in process."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:          # argparse: usage errors and --help
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
