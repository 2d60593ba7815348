"""The report's plots (`experiments.report.write_report` draws them into its --out).

Each `plot_*(runs, domains, path)` reads `records.RunRecord`s and saves one PNG;
those that return a bool draw nothing (False) when the records hold none of
what they show. Bands and bars are 95% bootstrap intervals over problems and
seeds (`experiments.analysis.stats`).
"""

import numpy as np

from experiments.analysis import algorithms, records
from polyepo.evaluation import splits


def _color(label):
  return algorithms.color(label)


def _smooth(x, window):
  x = np.asarray(x, float)
  if window <= 1 or len(x) < window:
    return x
  kernel = np.ones(window) / window
  padded = np.concatenate([np.full(window - 1, x[0]), x])
  return np.convolve(padded, kernel, mode="valid")


def _splits(runs, domains):
  """The eval splits that some domain's base evaluation holds."""
  return [s for s in splits.EVAL_SPLITS
          if any(s in r.evals[0] for r in runs if r.domain in domains)]


def _trained_rows(runs, domain):
  return {k: v for k, v in records.select_rows(runs, domain).items() if k != "Base"}


def _save(fig, path, title):
  fig.suptitle(title, fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  plt.close(fig)


def _band(ax, x, intervals, label):
  """Plots the means of `intervals` against x with their 95% band."""
  mean = np.array([np.nan if i is None else i.mean for i in intervals])
  low = np.array([np.nan if i is None else i.low for i in intervals])
  high = np.array([np.nan if i is None else i.high for i in intervals])
  ax.plot(x, mean, "o-", label=label, color=_color(label), lw=2, ms=3)
  ax.fill_between(x, low, high, color=_color(label), alpha=0.15)


def plot_pass_at_k(runs, domains, path):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  evaluated = _splits(runs, domains)
  fig, axes = plt.subplots(len(domains), len(evaluated),
                           figsize=(5.5 * len(evaluated), 4 * len(domains)), squeeze=False)
  for i, domain in enumerate(domains):
    for j, split in enumerate(evaluated):
      ax = axes[i, j]
      for label, row in records.select_rows(runs, domain).items():
        record = row["record"]
        if split not in record:
          continue
        n = int(record[split]["mean"]["num_samples"])
        ks = sorted({2 ** e for e in range(n.bit_length()) if 2 ** e <= n} | {n})
        _band(ax, ks, [records.value(record, split, f"pass@{k}") for k in ks], label)
      ax.set_xscale("log", base=2)
      ax.set_xlabel("k (samples per problem)")
      ax.set_ylabel("pass@k")
      ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}: {split} split")
      ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  _save(fig, path, "pass@k after training (bands: 95% bootstrap interval over problems and seeds)")


def plot_training(runs, domains, path, window=10):
  """Per domain: the rollouts' pass@1 at every step (train.jsonl, `window`-step mean
  over seeds: has training flattened?), then test pass@1, test pass@32 and ood
  pass@32 at each evaluation."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = [("test", "pass@1", "test pass@1"), ("test", "pass@32", "test pass@32"),
            ("ood", "pass@32", "ood pass@32")]
  fig, axes = plt.subplots(len(domains), len(panels) + 1,
                           figsize=(5 * (len(panels) + 1), 3.8 * len(domains)), squeeze=False)
  for i, domain in enumerate(domains):
    title = records.DOMAIN_TITLES.get(domain, domain)
    for label, row in _trained_rows(runs, domain).items():
      run = row["run"]
      ax = axes[i, 0]
      if run.train and "pass_at_1" in run.train[0]:
        ax.plot([r["step"] for r in run.train],
                _smooth(np.array([r["pass_at_1"] for r in run.train]), window),
                label=label, color=_color(label), lw=2)
      ax.set_title(f"{title}: rollout pass@1 ({window}-step mean)")
      evals = run.evals
      steps = [e["step"] for e in evals]
      for j, (split, key, name) in enumerate(panels, start=1):
        ax = axes[i, j]
        _band(ax, steps, [records.value(e, split, key) for e in evals], label)
        ax.set_title(f"{title}: {name}")
    for ax in axes[i]:
      ax.set_xlabel("RL step")
      ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  _save(fig, path, "Training (rollouts) and evaluation along training (step 0 = base model; "
        "bands: 95% bootstrap interval over problems and seeds)")


def plot_distinct_correct(runs, domains, path, window=10):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, len(domains), figsize=(6 * len(domains), 4), squeeze=False)
  for i, domain in enumerate(domains):
    ax = axes[0, i]
    for label, row in _trained_rows(runs, domain).items():
      run = row["run"]
      # Rollouts (N per prompt) and evaluation (more samples) count over different
      # sample sizes: compare curves within a kind, not across.
      values = np.array([r["distinct_correct_strategies/seeds"] for r in run.train])  # [T, S]
      mean = _smooth(values.mean(1), window)
      ax.plot([r["step"] for r in run.train], mean, label=label, color=_color(label), lw=2)
      evals = [e for e in run.evals if "test" in e]   # a validation-only run has none
      ax.plot([e["step"] for e in evals],
              [e["test"]["mean"]["distinct_correct_strategies"] for e in evals], "s--",
              color=_color(label), alpha=0.6, ms=5)
    ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}")
    ax.set_xlabel("RL step")
    ax.set_ylabel("distinct correct strategies per prompt")
    ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  n = runs[0].config["train"]["samples_per_prompt"]
  tested = [e["test"]["mean"] for r in runs for e in r.evals if "test" in e]
  squares = (f"; squares: test evaluation ({int(tested[0]['num_samples'])} samples)"
             if tested else "")
  _save(fig, path, f"Distinct correct strategies per prompt\nlines: training rollouts ({n} per "
        f"prompt, {window}-step mean){squares}")


def _strategy_names(rows):
  record = next(iter(rows.values()))["record"]
  split = next(s for s in ("test",) + splits.EVAL_SPLITS if s in record)
  return list(record[split]["mean"]["strategy_share"])


def plot_strategy_shares(runs, domains, path, window=5):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  rows_by_domain = {d: _trained_rows(runs, d) for d in domains}
  cols = max(len(r) for r in rows_by_domain.values())
  fig, axes = plt.subplots(len(domains), cols, figsize=(4.2 * cols, 3.6 * len(domains)),
                           squeeze=False)
  for i, domain in enumerate(domains):
    names = _strategy_names(rows_by_domain[domain])
    colors = list(plt.get_cmap("tab10").colors[:len(names) - 1]) + [(0.8, 0.8, 0.8)]
    for j, (label, row) in enumerate(rows_by_domain[domain].items()):
      ax = axes[i, j]
      train = row["run"].train
      shares = np.array([r["strategy_share"] for r in train])  # [T, K+1], seed mean
      smoothed = np.stack([_smooth(shares[:, k], window) for k in range(shares.shape[1])])
      ax.stackplot([r["step"] for r in train], smoothed, labels=names, colors=colors)
      ax.set_ylim(0, 1)
      ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}: {label}", fontsize=9)
      ax.set_xlabel("RL step")
      if j == 0:
        ax.set_ylabel("share of rollouts")
    for j in range(len(rows_by_domain[domain]), cols):
      axes[i, j].axis("off")
    axes[i, -1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
  _save(fig, path, f"Strategy shares of the training rollouts ({window}-step mean over seeds)")


def _grid(plt, rows_by_domain, domains):
  cols = max(1, max(len(r) for r in rows_by_domain.values()))
  fig, axes = plt.subplots(len(domains), cols, figsize=(4.2 * cols, 3.4 * len(domains)),
                           squeeze=False)
  for i, domain in enumerate(domains):
    for j in range(len(rows_by_domain[domain]), cols):
      axes[i, j].axis("off")
  return fig, axes


def plot_rare_strategies(runs, domains, path, window=5):
  """Training share of each strategy with under `records.RARE_SHARE` of the base
  model's test samples, per algorithm (seed mean, `window`-step mean)."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  rows_by_domain = {d: _trained_rows(runs, d) for d in domains}
  fig, axes = _grid(plt, rows_by_domain, domains)
  for i, domain in enumerate(domains):
    names = _strategy_names(records.select_rows(runs, domain))
    rare = records.rare_strategies(records.select_rows(runs, domain))
    for j, (label, row) in enumerate(rows_by_domain[domain].items()):
      ax = axes[i, j]
      train = [r for r in row["run"].train if "strategy_share" in r]
      for name in rare:
        k = names.index(name)
        ax.plot([r["step"] for r in train], _smooth([r["strategy_share"][k] for r in train],
                                                    window), label=name, lw=1.5)
      if not rare:
        ax.text(0.5, 0.5, f"no strategy under {records.RARE_SHARE:.0%}\nat step 0",
                ha="center", va="center", transform=ax.transAxes)
      else:
        ax.legend(fontsize=7)
      ax.axhline(records.RARE_SHARE, color="0.6", ls=":", lw=1)
      ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}: {label}", fontsize=9)
      ax.set_xlabel("RL step")
      if j == 0:
        ax.set_ylabel("share of rollouts")
      ax.grid(alpha=0.3)
  _save(fig, path, f"Strategies rare in the base model (< {records.RARE_SHARE:.0%} of its test "
        f"samples): their share of the training rollouts ({window}-step mean over seeds)")


def plot_discovery(runs, domains, path) -> bool:
  """Strategies discovered so far against the step; False (no plot) when no run
  recorded `correct_strategy_share`."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, len(domains), figsize=(6 * len(domains), 4), squeeze=False)
  drawn = False
  for i, domain in enumerate(domains):
    ax = axes[0, i]
    names = [n for n in _strategy_names(records.select_rows(runs, domain)) if n != "DEGENERATE"]
    for label, row in _trained_rows(runs, domain).items():
      found = records.discovery_steps(row["run"], names)
      if found is None:
        continue
      steps = [r["step"] for r in row["run"].train]
      count = [sum(s is not None and s <= step for s in found.values()) for step in steps]
      ax.step(steps, count, where="post", label=label, color=_color(label), lw=2)
      drawn = True
    ax.set_ylim(0, len(names) + 0.5)
    ax.set_title(records.DOMAIN_TITLES.get(domain, domain))
    ax.set_xlabel("RL step")
    ax.set_ylabel("strategies discovered")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
  if not drawn:
    plt.close(fig)
    return False
  _save(fig, path, f"Strategies discovered so far (discovered: >= "
        f"{records.DISCOVERY_SHARE:.0%} of a step's rollouts are correct and follow it, seed mean)")
  return True


def plot_forced_accuracy(runs, domains, path) -> bool:
  """Each strategy's forced accuracy (test, seed mean) at every evaluation, per
  algorithm; False (no plot) when no evaluation recorded `forced_accuracy`."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  rows_by_domain = {d: _trained_rows(runs, d) for d in domains}
  fig, axes = _grid(plt, rows_by_domain, domains)
  drawn = False
  for i, domain in enumerate(domains):
    for j, (label, row) in enumerate(rows_by_domain[domain].items()):
      ax = axes[i, j]
      evals = [e for e in row["run"].evals
               if "test" in e and e["test"]["mean"].get("forced_accuracy") is not None]
      if evals:
        drawn = True
        for name in evals[0]["test"]["mean"]["forced_accuracy"]:
          accuracy = [e["test"]["mean"]["forced_accuracy"].get(name) for e in evals]
          ax.plot([e["step"] for e in evals],
                  [np.nan if a is None else a for a in accuracy], "o-", label=name, ms=3)
        ax.legend(fontsize=7)
      ax.set_ylim(-0.02, 1.02)
      ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}: {label}", fontsize=9)
      ax.set_xlabel("RL step")
      if j == 0:
        ax.set_ylabel("forced accuracy (test)")
      ax.grid(alpha=0.3)
  if not drawn:
    plt.close(fig)
    return False
  _save(fig, path, "Forced accuracy of each strategy along training (test, seed mean)")
  return True


EXPLORATION_PANELS = (("decoy_mass", "decoy mass"),
                      ("distinct_correct_families", "distinct correct families"))
ALIGNMENT_PANELS = (("correct_pushed_down", "correct responses with advantage < 0"),
                    ("incorrect_pushed_up", "incorrect responses with advantage > 0"),
                    ("all_correct_advantage", "mean |advantage| in all-correct groups"))


def plot_exploration(runs, domains, path, window=10) -> bool:
  """Decoy mass and distinct correct families along training (lines: rollouts;
  squares: test evaluations); False (no plot) when no run recorded them."""
  return _metric_panels(runs, domains, path, EXPLORATION_PANELS, window,
                        f"Exploration along training\nlines: training rollouts ({window}-step "
                        "mean over seeds); squares: test evaluation")


def plot_advantage_alignment(runs, domains, path, window=10) -> bool:
  """How each algorithm's advantages line up with correctness along training
  (`polyepo.metrics.advantage_alignment`; GRPO's are 0); False (no plot) when no
  run recorded them."""
  return _metric_panels(runs, domains, path, ALIGNMENT_PANELS, window,
                        f"Advantages against correctness (training rollouts, {window}-step "
                        "mean over seeds; GRPO: 0)")


def _metric_panels(runs, domains, path, panels, window, caption) -> bool:
  """One panel per (key, title) of `panels` and row per domain: the key along
  training (lines) and at test evaluations (squares), wherever a run recorded it;
  False (no plot) when none did."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(len(domains), len(panels),
                           figsize=(5.5 * len(panels), 3.8 * len(domains)), squeeze=False)
  drawn = False
  for i, domain in enumerate(domains):
    for j, (key, title) in enumerate(panels):
      ax = axes[i, j]
      for label, row in _trained_rows(runs, domain).items():
        train = [r for r in row["run"].train if key in r]
        if train:
          ax.plot([r["step"] for r in train], _smooth([r[key] for r in train], window),
                  label=label, color=_color(label), lw=2)
          drawn = True
        evals = [e for e in row["run"].evals
                 if "test" in e and e["test"]["mean"].get(key) is not None]
        if evals:
          ax.plot([e["step"] for e in evals], [e["test"]["mean"][key] for e in evals], "s--",
                  color=_color(label), alpha=0.6, ms=5,
                  label=None if train else label)
          drawn = True
      ax.set_title(f"{records.DOMAIN_TITLES.get(domain, domain)}: {title}")
      ax.set_xlabel("RL step")
      ax.grid(alpha=0.3)
      if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
  if not drawn:
    plt.close(fig)
    return False
  _save(fig, path, caption)
  return True


def plot_shaping_lambda(runs, domains, path) -> bool:
  """Reward shaping's final test pass@1 and distinct correct strategies against λ
  (the λs trained on its row's budget, `records.shaping_by_lambda`), with Poly-EPO
  (no λ) as a band, one row per domain where λ was swept; False (no plot) when none."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  shaping = {d: records.shaping_by_lambda(runs, d) for d in domains}
  domains = [d for d in domains if len(shaping[d]) >= 2]   # the domains where λ was swept
  if not domains:
    return False
  panels = [("pass@1", "test pass@1"), ("distinct_correct", "distinct correct (test)")]
  fig, axes = plt.subplots(len(domains), len(panels), figsize=(5 * len(panels),
                                                              3.4 * len(domains)), squeeze=False)
  for i, domain in enumerate(domains):
    group = list(shaping[domain].values())
    poly = records.select_rows(runs, domain).get("Poly-EPO")
    title = records.DOMAIN_TITLES.get(domain, domain)
    for j, (key, name) in enumerate(panels):
      ax = axes[i, j]
      intervals = [records.value(r.evals[-1], "test", key) for r in group]
      lams = [r.lam for r, v in zip(group, intervals) if v is not None]
      intervals = [v for v in intervals if v is not None]
      if intervals:
        mean = np.array([v.mean for v in intervals])
        yerr = np.array([[m - v.low for m, v in zip(mean, intervals)],
                         [v.high - m for m, v in zip(mean, intervals)]])
        ax.errorbar(lams, mean, yerr=yerr, marker="o", capsize=3,
                    color=algorithms.color("Reward shaping"), label="reward shaping")
      band = poly and records.value(poly["record"], "test", key)
      if band:
        ax.axhspan(band.low, band.high, color=algorithms.color("Poly-EPO"), alpha=0.2)
        ax.axhline(band.mean, color=algorithms.color("Poly-EPO"), label="Poly-EPO (no λ)")
      ax.set_xscale("log")
      ax.set_xlabel("λ (weight of the diversity bonus)")
      ax.set_title(f"{title}: {name}")
      ax.grid(alpha=0.3)
      ax.legend(fontsize=8)
  _save(fig, path, "Reward shaping against λ vs Poly-EPO, final evaluation (bars and band: "
        "95% bootstrap interval over problems and seeds)")
  return True
