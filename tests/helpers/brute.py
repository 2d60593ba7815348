"""Reference implementations in plain Python, written independently of polyepo.

Tests compare the library with these: enumeration with itertools, sets and
fractions, no JAX.
"""

import itertools
import math
from collections import Counter
from fractions import Fraction

DEGENERATE = -1


def polychromic(rewards, labels):
  n = len(rewards)
  distinct = len({l for l in labels if l != DEGENERATE})
  return sum(rewards) / n * distinct / n


def pass_at_n(rewards, labels):
  return max(rewards)


def mean_reward(rewards, labels):
  return sum(rewards) / len(rewards)


def srl(rewards, labels):
  counts = Counter(labels)
  return max(r / counts[l] for r, l in zip(rewards, labels))


def majority_vote(rewards, answers):
  votes = Counter(a for a in answers if a >= 0)
  if not votes:
    return 0.0
  top = max(votes.values())
  winners = [a for a, c in votes.items() if c == top]
  reward_of = {a: r for r, a in zip(rewards, answers)}
  return sum(reward_of[a] for a in winners) / len(winners)


def marginal_advantage(f, rewards, labels, n, reduction="mean", subsets=None):
  """Eq. 8-9 by enumeration over all (or the given) subsets."""
  N = len(rewards)
  if subsets is None:
    subsets = list(itertools.combinations(range(N), n))
  scores = {s: f([rewards[i] for i in s], [labels[i] for i in s]) for s in subsets}
  baseline = sum(scores.values()) / len(scores)
  out = []
  for i in range(N):
    mine = [scores[s] - baseline for s in subsets if i in s]
    if reduction == "sum":
      out.append(sum(mine))
    else:
      out.append(sum(mine) / len(mine) if mine else 0.0)
  return out


def pass_at_k(n, c, k):
  return 1.0 - Fraction(math.comb(n - c, k), math.comb(n, k))
