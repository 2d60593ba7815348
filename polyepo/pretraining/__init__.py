"""The base model: two-stage supervised pretraining on strategy demonstrations.
"""
