"""Loaded before every other conftest: let Python and pytest keep compiled bytecode in ``__pycache__`` even where
``PYTHONDONTWRITEBYTECODE`` is set (this machine's image sets it).  Without the cache each of the three workers
compiles every module and rewrites every test's asserts again (14 s per worker here), and every ``bot``
subprocess a test starts compiles the whole package again.  ``__pycache__`` is ignored by git."""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
