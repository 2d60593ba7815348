r"""Dr. GRPO ("Understanding R1-Zero-Like Training: A Critical Perspective",
arXiv:2503.20783): GRPO without its two biases, the group's reward std dividing
each advantage (here `algorithm.normalize=False`: A_i = r_i − mean r) and each
response's length dividing its loss (here `train.aggregation="sequence_sum"`:
each response's token sum over the fixed length T, then the mean over responses).

Its other shared settings are Poly-EPO as released (configs/poly_epo_official.py,
`release_settings`): N = 8 samples per prompt, clip 0.2 / 0.28, gradient clip
0.3, no KL, no entropy bonus. The pair then differs only in the advantage, as
configs/grpo.py and configs/poly_epo.py do: N = 8 rather than configs/grpo.py's
16 because a group algorithm's N is part of its estimator (its baseline is the
mean of N rewards), and the release trains its Poly-EPO with 8. (The release's
own baseline script, `qwen3_baselineexploration_withdrgrpo.sh`, runs another
estimator with clip 0.2 / 0.2, so this is the GRPO matched to its Poly-EPO, not
a script of the release.) The learning rate is tuned by the registered rule,
like every algorithm's (configs/sweeps/tuning.py).
"""

from configs import base, poly_epo_official


def get_config(arg=None):
  config = base.get_config(arg, name="dr_grpo", algorithm="grpo", normalize=False)
  poly_epo_official.release_settings(config)
  return config
