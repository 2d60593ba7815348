"""polyepo: set reinforcement learning and Poly-EPO in JAX."""

import setuptools

setuptools.setup(
    name="polyepo",
    version="0.1.0",
    description=(
        "Set reinforcement learning and Poly-EPO in JAX, with synthetic reasoning "
        "domains whose strategy labels are exact."
    ),
    python_requires=">=3.10",
    # Only the library is installed. envs/, configs/ and experiments/ (generic
    # names other distributions use too) run from the repository root:
    # `python -m experiments.synthetic ...`, pytest (pytest.ini) and the notebooks
    # put the root on sys.path.
    packages=setuptools.find_packages(include=["polyepo", "polyepo.*"]),
    install_requires=[
        "jax>=0.6",
        "flax>=0.10",
        "optax>=0.2.4",
        "chex>=0.1.88",
        "orbax-checkpoint>=0.11",
        "ml-collections>=1.0",
        "tensorflow-datasets>=4.9.8",
        "array-record>=0.7",
        "tensorboardX>=2.6",
        "matplotlib>=3.8",
        "tqdm>=4.66",
        "numpy>=1.26",
    ],
    extras_require={
        "test": ["pytest>=8", "pytest-xdist>=3.5", "hypothesis>=6.100", "scipy>=1.11",
                 "nbclient>=0.10", "nbformat>=5.10", "ipykernel>=6.29"],
        "notebooks": ["jupyter", "nbclient>=0.10", "nbformat>=5.10", "ipykernel>=6.29"],
        # experiments.sweep --launcher=ray (docs/ray.md)
        "ray": ["ray>=2.40"],
    },
)
