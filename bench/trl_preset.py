"""Reference: Hugging Face TRL's GRPOTrainer on the bench/train_step.py preset, on CPU.

  python bench/trl_preset.py [--steps 6] [--json]

Standalone (imports neither jax nor polyepo). On first use it creates its own
virtual environment at <repo>/.venv-trl (torch==2.13.0, CPU build, installed
first so that trl cannot pull a CUDA build, then trl with transformers,
accelerate and datasets; about a minute) and re-executes itself there; TRL and
torch are never dependencies of the package.

The preset, as in bench/train_step.py: a randomly initialised float32
LlamaForCausalLM with 2 layers of width 128, 4 heads (standard multi-head
attention, head dim 32), RMSNorm pre-norm, RoPE, no biases, an untied head and a
32-token vocabulary. Our MLP is 128 -> 512 -> 128 with ReLU; Llama's is gated
(three matrices), so intermediate_size=341 gives it the same FLOPs
(3 * 128 * 341 ~ 2 * 128 * 512). Each step: 16 distinct prompts of 16 random
tokens, 16 samples each (256 completions) of exactly 48 tokens (EOS suppressed
with min_new_tokens), temperature 1, no top-k/top-p, random 0/1 rewards, no
reference model (beta=0), one epoch, all 256 completions in one Adam step
(lr 1e-4). A step is timed whole, from the end of the previous one (the first
from its start) to its end: generation (inside TRL's training_step), scoring,
loss, backward and optimizer. The first step is a warm-up; the median of the
rest is reported, and with --json the last line of stdout is a JSON object.

Run it on an otherwise idle machine: with torch's default of one thread per core,
any other busy process makes its many tiny ops wait on each other (measured: a
36x slower generation on 2 cores beside one busy process; --threads 1 avoids it).
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv-trl")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
TORCH = "2.13.0"
PROMPTS, SAMPLES, RESPONSE, PROMPT_LEN = 16, 16, 48, 16
VOCAB = 32


def ensure_venv():
  """Creates .venv-trl if needed and re-executes this script with its python."""
  if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
    return
  if os.environ.get("TRL_PRESET_REEXEC"):
    sys.exit(f"error: {VENV_PYTHON} does not run inside {VENV}; delete {VENV} and retry")
  if not os.path.exists(os.path.join(VENV, ".complete")):
    print(f"creating {VENV} (torch=={TORCH} CPU, then trl; takes a minute or more)",
          file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    pip = [VENV_PYTHON, "-m", "pip", "install", "--quiet", "--progress-bar", "off"]
    for packages in ([f"torch=={TORCH}"], [f"torch=={TORCH}", "trl"]):  # torch first
      done = subprocess.run(pip + packages, capture_output=True, text=True)
      if done.returncode:
        sys.exit(f"{done.stdout}{done.stderr}error: pip install {' '.join(packages)} failed")
    version = subprocess.run([VENV_PYTHON, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    if not version.startswith(TORCH):
      sys.exit(f"error: pip installed torch {version or '(none)'} in {VENV}, not {TORCH}; "
               f"delete {VENV} and check that a torch=={TORCH} CPU wheel is available")
    open(os.path.join(VENV, ".complete"), "w").close()
    print(f"created {VENV} in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
  os.environ["TRL_PRESET_REEXEC"] = "1"
  os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def make_tokenizer():
  """Word-level tokenizer "t00".."t31" (pad t00, eos t01) that adds no special tokens.

  Two digits each: special tokens are matched inside words, so with "t1" as eos
  "t14" would split into "t1" + "4".
  """
  from tokenizers import Tokenizer, models, pre_tokenizers
  from transformers import PreTrainedTokenizerFast
  vocab = {f"t{i:02d}": i for i in range(VOCAB)}
  tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="t00"))
  tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
  return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="t00", eos_token="t01",
                                 unk_token="t00", padding_side="left")


def run(steps, threads=0):
  import random
  import statistics
  import warnings

  warnings.filterwarnings("ignore")
  import datasets
  import torch
  import transformers
  import trl
  from transformers import LlamaConfig, LlamaForCausalLM, TrainerCallback
  transformers.logging.set_verbosity_error()
  transformers.logging.disable_progress_bar()
  datasets.disable_progress_bars()
  datasets.logging.set_verbosity_error()

  if threads:
    torch.set_num_threads(threads)
  torch.manual_seed(0)
  tokenizer = make_tokenizer()
  config = LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=341,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                       head_dim=32, hidden_act="relu", max_position_embeddings=PROMPT_LEN + RESPONSE,
                       rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                       mlp_bias=False, pad_token_id=0, eos_token_id=1, bos_token_id=None,
                       torch_dtype=torch.float32)
  model = LlamaForCausalLM(config).float()

  rng = random.Random(0)
  prompts = [" ".join(f"t{rng.randrange(2, VOCAB):02d}" for _ in range(PROMPT_LEN))
             for _ in range(PROMPTS * steps)]
  assert all(len(tokenizer(p)["input_ids"]) == PROMPT_LEN for p in prompts)
  dataset = datasets.Dataset.from_dict({"prompt": prompts})

  lengths, groups = [], []

  def reward(prompts, completions, completion_ids, **kwargs):  # cheap: Bernoulli(0.4)
    lengths.extend(len(ids) for ids in completion_ids)
    groups.append(sorted(prompts.count(p) for p in set(prompts)))
    return [float(rng.random() < 0.4) for _ in completion_ids]

  args = trl.GRPOConfig(
      output_dir=os.path.join(VENV, "run"), use_cpu=True, bf16=False, fp16=False,
      per_device_train_batch_size=PROMPTS * SAMPLES, gradient_accumulation_steps=1,
      steps_per_generation=1, num_generations=SAMPLES, num_iterations=1, max_steps=steps,
      max_completion_length=RESPONSE, temperature=1.0, top_k=0, top_p=1.0,
      generation_kwargs={"min_new_tokens": RESPONSE}, beta=0.0, learning_rate=1e-4,
      lr_scheduler_type="constant", warmup_steps=0, optim="adamw_torch", weight_decay=0.0,
      max_grad_norm=1.0, logging_strategy="no", save_strategy="no", eval_strategy="no",
      report_to="none", disable_tqdm=True, shuffle_dataset=False, seed=0)
  trainer = trl.GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                            processing_class=tokenizer)

  generation = []
  generate = trainer._generate

  def timed_generate(*a, **kw):
    start = time.perf_counter()
    out = generate(*a, **kw)
    generation.append(time.perf_counter() - start)
    return out

  trainer._generate = timed_generate

  class StepTimer(TrainerCallback):
    def __init__(self):
      self.last, self.times = None, []

    def on_step_begin(self, args, state, control, **kwargs):
      if self.last is None:
        self.last = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
      now = time.perf_counter()
      self.times.append(now - self.last)
      self.last = now

  timer = StepTimer()
  trainer.add_callback(timer)
  trainer.remove_callback(transformers.PrinterCallback)  # the final train_runtime dict
  trainer.train()

  if len(timer.times) != steps or len(lengths) != steps * PROMPTS * SAMPLES:
    sys.exit(f"error: {len(timer.times)} steps, {len(lengths)} completions timed")
  if groups != [[SAMPLES] * PROMPTS] * steps:
    sys.exit(f"error: rewarded batches are not {PROMPTS} prompts x {SAMPLES} samples")
  if set(lengths) != {RESPONSE}:
    sys.exit(f"error: completion lengths {min(lengths)}..{max(lengths)}, not {RESPONSE}")
  timed = timer.times[1:] or timer.times
  result = {"seconds_per_step": statistics.median(timed),
            "generation_seconds": statistics.median(generation[1:] or generation),
            "steps": [round(t, 4) for t in timer.times], "torch": torch.__version__,
            "trl": trl.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(), "completion_tokens": RESPONSE}
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=6)
  parser.add_argument("--json", action="store_true", help="last line of stdout: JSON result")
  parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
  args = parser.parse_args()
  ensure_venv()
  os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                    TOKENIZERS_PARALLELISM="false", TRANSFORMERS_VERBOSITY="error")
  r = run(args.steps, args.threads)
  print(f"torch {r['torch']}, trl {r['trl']}, transformers {r['transformers']}, "
        f"{r['threads']} torch threads")
  print(f"preset: 2 layers x 128, 4 heads, vocab {VOCAB}, {PROMPTS} prompts x {SAMPLES} samples "
        f"x {RESPONSE} tokens (full length), 1 epoch, Adam, float32, CPU")
  print("seconds per step: " + " ".join(f"{t:.3f}" for t in r["steps"]) + " (first is warm-up)")
  share = r["generation_seconds"] / r["seconds_per_step"]
  print(f"median {r['seconds_per_step']:.3f} s/step, generation {r['generation_seconds']:.3f} s "
        f"({share:.0%})")
  if args.json:
    print(json.dumps(r))


if __name__ == "__main__":
  main()
