"""Evaluation of a policy: sampling and scoring fixed problems, forced-strategy
accuracy, and the held-out splits.
"""
