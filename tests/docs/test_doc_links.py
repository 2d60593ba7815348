"""Every relative link in the README and docs/ reaches a file, and every #anchor a heading
of it (as GitHub names headings), so a renamed section or a removed file is caught."""

import functools
import glob
import os
import re

import pytest

from sweep_dirs import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _pages():
  return ["README.md"] + sorted(os.path.relpath(p, ROOT)
                                for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def github_anchor(heading: str) -> str:
  """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
  text = heading.strip().lower().replace("`", "")
  text = re.sub(r"[^\w\- ]", "", text)
  return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def _anchors(path):
  with open(path) as f:
    text = FENCE.sub("", f.read())
  return {github_anchor(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def test_github_anchor_matches_hand_worked_headings():
  assert github_anchor("Poly-PPO and PPO with a critic") == "poly-ppo-and-ppo-with-a-critic"
  assert github_anchor("Trained longer, it generalises") == "trained-longer-it-generalises"
  assert github_anchor("Earlier generations, in git history") == \
      "earlier-generations-in-git-history"
  assert github_anchor("Work of varying length: `on=` masks") == \
      "work-of-varying-length-on-masks"


@pytest.mark.parametrize("page", _pages())
def test_relative_links_resolve(page):
  with open(os.path.join(ROOT, page)) as f:
    text = FENCE.sub("", f.read())
  broken = []
  for target in LINK.findall(text):
    if re.match(r"[a-z]+:", target):
      continue                                  # http(s):, mailto:
    path, _, anchor = target.partition("#")
    resolved = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path)) if path \
        else os.path.join(ROOT, page)
    if not os.path.exists(resolved):
      broken.append(f"{target}: no such file")
    elif anchor and resolved.endswith(".md") and anchor not in _anchors(resolved):
      broken.append(f"{target}: no such heading")
  assert not broken, f"{page}: " + "; ".join(broken)
