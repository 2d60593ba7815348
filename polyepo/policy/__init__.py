"""The transformer policy: model, attention with its KV cache, bfloat16 products,
the jitted sampler and the critic's value head.
"""
