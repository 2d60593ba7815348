"""What a run writes: checkpoints (orbax), JSONL and TensorBoard records, and the
run directory's layout.
"""
