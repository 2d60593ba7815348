"""Paths the tests share: the repository root and the pinned values."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PINS = os.path.join(ROOT, "tests", "pins")  # values recorded before a refactor, by hand-checked scripts
