"""RL post-training: the compiled train step (`train.make_train`), the host loop
(`loop.train_and_evaluate`), the algorithms as values and their registry
(`algorithms`, built from `parts`), their batches (estimators, ppo_batch) and the
pieces Poly-PPO adds (poly_ppo, vines).
"""
