r"""GRPO vs Poly-EPO trained longer and faster than the default (the headline's follow-up).

  python -m experiments.sweep --sweep=configs/sweeps/longer.py
  python -m experiments.sweep --sweep=configs/sweeps/longer.py:steps=400,learning_rate=1e-4

In the headline's 100 steps at learning rate 3e-5 the policy moves little (KL to the
base model ≈ 0.01-0.02), which may be too little for Poly-EPO to make rare strategies
reliable. This sweep trains both algorithms `steps` steps at `learning_rate`.

Config string: domains=all|multiplication|polynomial_roots, steps=200,
learning_rate=1e-4, seeds=1, size=default.
"""

from configs import choices
from configs.sweeps import headline


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", size="default", seeds=1, steps=200,
                          learning_rate=1e-4)
  domains = headline.domains(args.domains)
  shared = dict(headline.shared_overrides(args.seeds, args.size),
                **{"train.num_steps": args.steps, "train.learning_rate": args.learning_rate})
  return [(f"configs/{algorithm}.py", f"domain={domain},size={args.size}", dict(shared))
          for domain in domains for algorithm in ("grpo", "poly_epo")]
