"""Timing helpers shared by the benchmarks."""

import collections
import glob
import gzip
import json
import re
import statistics
import tempfile
import time
from typing import NamedTuple

import jax


def median_seconds(fn, repeats: int) -> float:
  """Median wall time of `fn()` over `repeats` calls, after one warm-up call."""
  return interleaved_median_seconds({"fn": fn}, repeats)["fn"]


def interleaved_median_seconds(fns, repeats: int):
  """Median wall times of several `{name: fn}` timed in turn, round after round.

  Interleaving spreads any drift in the machine's speed (other processes, clock
  changes) over all of them, so their ratios are fairer than timing each in a block.
  """
  for fn in fns.values():
    jax.block_until_ready(fn())  # compile + warm up
  times = {name: [] for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      jax.block_until_ready(fn())
      times[name].append(time.perf_counter() - start)
  return {name: statistics.median(t) for name, t in times.items()}


class OpTime(NamedTuple):
  """One XLA operation of a compiled program: seconds per call, class, output shape."""
  name: str
  seconds: float
  kind: str   # "matmul", "matmul bf16", "movement" or "other"
  shape: str


_MOVEMENT = {"parameter", "constant", "copy", "transpose", "bitcast", "reshape", "slice",
             "dynamic-slice", "dynamic-update-slice", "pad", "concatenate", "broadcast",
             "tuple", "get-tuple-element"}


def _op_kinds(hlo_text):
  """{entry instruction name: (kind, output shape)} of a compiled HLO module's text.

  An operation is a matmul if it is a dot or convolution or a fusion whose
  computation holds one ("matmul bf16" if both operands of such a product are
  bfloat16: a product that runs on bfloat16 hardware, not one XLA upcast to
  float32); data movement if it (or every instruction of its fusion) only moves
  data (copies, transposes, slices, pads, concatenations, broadcasts); else
  other (element-wise work and reductions).
  """
  bodies, name = {}, None
  for line in hlo_text.splitlines():
    header = re.match(r"(?:ENTRY )?%(\S+) .*\{$", line)  # computations start unindented
    if header:
      name, bodies[header.group(1)] = header.group(1), []
    elif name is not None:
      bodies[name].append(line)
  entry = re.search(r"^ENTRY %(\S+)", hlo_text, re.M).group(1)

  def opcode(line):
    found = re.search(r"\s([a-z][\w-]*)\(", line.split("=", 1)[1])
    return found.group(1) if found else ""

  def element_types(lines):
    """{instruction name: element type} of one computation's lines."""
    return dict(re.findall(r"^\s*(?:ROOT )?%(\S+) = (\w+)\[", "\n".join(lines), re.M))

  def bf16_product(lines, types):
    """Whether a dot or convolution among `lines` multiplies two bfloat16
    operands (`types`: the element types of its computation)."""
    products = (re.search(r"\s(?:dot|convolution)\(%([\w.-]+), %([\w.-]+)\)", line)
                for line in lines)
    return any(all(types.get(name) == "bf16" for name in found.groups())
               for found in products if found)

  entry_types = element_types(bodies[entry])
  kinds = {}
  for line in bodies[entry]:
    m = re.match(r"\s*(?:ROOT )?%(\S+) = (\S+) ", line)
    if not m:
      continue
    code = opcode(line)
    called = re.search(r"calls=%([\w.-]+)", line)
    body = bodies.get(called.group(1), []) if called else []
    codes = {opcode(l) for l in body if "=" in l} if body else {code}
    if codes & {"dot", "convolution"}:
      bf16 = (bf16_product(body, element_types(body)) if body
              else bf16_product([line], entry_types))
      kind = "matmul bf16" if bf16 else "matmul"
    elif codes <= _MOVEMENT:
      kind = "movement"
    else:
      kind = "other"
    kinds[m.group(1)] = (kind, m.group(2))
  return kinds


def xla_op_seconds(jitted, args, repeats: int):
  """Seconds per call of each XLA operation of `jitted(*args)`: a list of OpTime.

  Runs it `repeats` times under the JAX profiler after a warm-up and reads the
  trace; operations of the program that took no measurable time are left out.
  Operations on different cores can overlap, so the sum can exceed the wall time.
  """
  compiled = jitted.lower(*args).compile()  # the program traced is the one classified
  kinds = _op_kinds(compiled.as_text())
  jax.block_until_ready(compiled(*args))
  with tempfile.TemporaryDirectory() as trace_dir:
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
      for _ in range(repeats):
        jax.block_until_ready(compiled(*args))
    path, = glob.glob(f"{trace_dir}/**/*.trace.json.gz", recursive=True)
    with gzip.open(path) as f:
      trace = json.load(f)
  events = trace["traceEvents"] if isinstance(trace, dict) else trace
  micros = collections.Counter()
  for event in events:
    if event.get("ph") == "X" and event.get("name") in kinds:
      micros[event["name"]] += event.get("dur", 0)
  return [OpTime(name, us / 1e6 / repeats, *kinds[name]) for name, us in micros.items()]
