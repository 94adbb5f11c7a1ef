"""Command lines run inside the test process: ``python -m core.X ARGS`` is ``core.X.main(ARGS)``, so a test that only
reads a refusal or a short result need not start an interpreter and import torch (3-5 s each on 2 cores).
tests/core/test_cli.py still runs every command as a real ``python -m`` process, exit status included."""
from __future__ import annotations

import contextlib
import importlib
import io
import logging
import subprocess

import torch


def run_main(module: str, *args) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` in this process: MODULE's ``main(argv)`` with stdout and stderr captured; the exit
    status is main's return value, or the code of the SystemExit it raised. Any other exception escapes (the
    process would have printed a traceback); torch's thread count is restored (``--threads`` sets it). Log records
    (the trainer's progress lines) go to the captured stderr, as the command's own ``logging.basicConfig`` sends
    them there."""
    main = importlib.import_module(module).main
    argv = [str(a) for a in args]
    out, err, threads = io.StringIO(), io.StringIO(), torch.get_num_threads()
    handler, root = logging.StreamHandler(err), logging.getLogger()
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = root.level
    root.addHandler(handler)  # before main: its basicConfig then adds no handler bound to this call's stderr
    root.setLevel(logging.INFO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        torch.set_num_threads(threads)
        root.removeHandler(handler)
        root.setLevel(level)
    return subprocess.CompletedProcess(["python", "-m", module, *argv], code or 0, out.getvalue(), err.getvalue())
