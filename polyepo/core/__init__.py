"""The pure set-RL math, written for one prompt's group and vmapped by the caller.

Nothing here imports a model, sampler, env or I/O: every function is `jnp` on
arrays, jittable and vmappable.
"""
