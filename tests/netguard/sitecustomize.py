"""Imported at start-up by every Python process a test starts (tests/conftest.py puts this folder first on
``PYTHONPATH``): installs the tests' socket guard (:mod:`trajudge_socket_guard`) when the test session named its log
in ``TRAJUDGE_SOCKET_GUARD_LOG``, then runs the ``sitecustomize`` this file shadows, if the Python has one.

One process is left unguarded: Ray's dashboard head. At start-up it asks the cloud metadata endpoints
(169.254.169.254, metadata.google.internal) which cloud it runs on, even with usage statistics off
(ray/dashboard/modules/usage_stats/usage_stats_head.py, Ray 2.60): Ray's own start-up, not a call trajudge makes
or could turn off (docs/ray.md says so). Ray's workers, where trajudge's tasks run, are guarded."""

import importlib.machinery
import importlib.util
import os
import sys

_RAY_DASHBOARD = os.path.join("ray", "dashboard", "dashboard.py")

if os.environ.get("TRAJUDGE_SOCKET_GUARD_LOG") and not (sys.argv and sys.argv[0].endswith(_RAY_DASHBOARD)):
    from trajudge_socket_guard import LOG_ENV, SocketGuard

    SocketGuard(log=os.environ[LOG_ENV]).install()

_here = os.path.dirname(os.path.realpath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(  # this folder under any spelling (a symlink) is left out
    "sitecustomize", [p for p in sys.path if os.path.realpath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _shadowed = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_shadowed)
