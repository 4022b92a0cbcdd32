"""What a cross-check does when its reference is missing (docs/testing.md, "References").

A cross-check compares weft against an independent reference: a PyPI or Debian package
(numpy, safetensors, tiktoken, transformers, ...) or a data file a package installs (the
fortune corpus). Without it the check cannot run:

* on a developer's partial machine it is skipped: one line "<script>: SKIP: <reason>" and exit
  status 77, which CTest reports as Skipped (the test sets SKIP_RETURN_CODE 77);
* with WEFT_REQUIRE_REFERENCES=1 in the environment (exported by .ci/run, so in CI) it fails:
  one line "<script>: FAIL: <reason> ..." and exit status 1, so that CI cannot be green with a
  reference check unrun.

Use, at the top of a script, before importing the reference:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from reference_skip import require, optional, unavailable  # noqa: E402
    require(["numpy", "safetensors.numpy"], "python3 -m pip install safetensors numpy")
    import numpy as np                                         # now known to import

API:
    require(modules, hint="")   each module imports, or unavailable(...) (does not return)
    optional(module, hint="")   True when it imports; False (and one "note:" line) when it does
                                not on a partial machine; a failure under WEFT_REQUIRE_REFERENCES=1
    require_path(path, hint="") the file or directory exists, or unavailable(...)
    unavailable(reason, hint="") exit 77 (skip), or 1 under WEFT_REQUIRE_REFERENCES=1
    required()                  whether WEFT_REQUIRE_REFERENCES=1 is set
Standard library only.
"""

import importlib
import os
import sys

SKIP_RETURN_CODE = 77
VARIABLE = "WEFT_REQUIRE_REFERENCES"


def required():
    """Whether a missing reference is a failure (WEFT_REQUIRE_REFERENCES=1: CI) or a skip."""
    return os.environ.get(VARIABLE, "") == "1"


def _name():
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "cross-check"


def unavailable(reason, hint=""):
    """The reference `reason` names is missing: one line, then exit 77 (CTest's Skipped) or,
    under WEFT_REQUIRE_REFERENCES=1, exit 1. Does not return."""
    fix = f" ({hint})" if hint else ""
    sys.stdout.flush()
    if required():
        print(f"{_name()}: FAIL: {reason}{fix}; {VARIABLE}=1 makes a missing reference a failure", flush=True)
        sys.exit(1)
    print(f"{_name()}: SKIP: {reason}{fix}", flush=True)
    sys.exit(SKIP_RETURN_CODE)


def _import_error(module):
    try:
        importlib.import_module(module)
        return None
    except ImportError as e:  # ModuleNotFoundError, or a package that is there but broken
        return e


def require(modules, hint=""):
    """Every module of `modules` (names such as "safetensors.numpy") imports, or the check
    cannot run: unavailable(...)."""
    if isinstance(modules, str):
        modules = [modules]
    for m in modules:
        e = _import_error(m)
        if e is not None:
            unavailable(f"the Python module '{m}' does not import ({e})", hint)


def optional(module, hint=""):
    """Whether `module` imports. A part of a check that only adds a second reference uses it:
    without the module the part is left out with one note line, except under
    WEFT_REQUIRE_REFERENCES=1, where that is a failure (unavailable)."""
    e = _import_error(module)
    if e is None:
        return True
    if required():
        unavailable(f"the Python module '{module}' does not import ({e})", hint)
    fix = f" ({hint})" if hint else ""
    print(f"{_name()}: note: the Python module '{module}' does not import: that part is left out{fix}", flush=True)
    return False


def require_path(path, hint=""):
    """A reference file or directory (e.g. a corpus a Debian package installs) exists, or the
    check cannot run: unavailable(...)."""
    if not os.path.exists(path):
        unavailable(f"'{path}' does not exist", hint)
