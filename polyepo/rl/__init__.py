"""RL post-training: the compiled train step (`train.make_train`), the host loop
(`loop.train_and_evaluate`), the estimator registry and the pieces PPO and
Poly-PPO add (ppo_batch, poly_ppo, vines).
"""
