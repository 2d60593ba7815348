"""The config strings' choices (domains, sizes) and their parser."""

import ml_collections

import envs

DOMAINS = envs.NAMES  # the domains shipped in envs/ (a sweep's "all")
SIZES = ("smoke", "default", "paper")


def parse_arg(arg, **defaults):
  """Parses a config string "k1=v1,k2=v2" into a ConfigDict over `defaults`.

  Unknown keys and values outside the known choices fail here, naming them. A
  domain is a registered name (`envs.names()`) or a 'package.module:Class' env
  class, which is imported here so that a missing one fails now.
  """
  result = ml_collections.ConfigDict(defaults)
  for item in filter(None, (arg or "").split(",")):
    key, sep, value = item.partition("=")
    if not sep:
      raise ValueError(f"Config string item {item!r} is not of the form key=value.")
    if key not in defaults:
      raise ValueError(f"Unknown config string key {key!r}; valid keys: {', '.join(defaults)}.")
    if isinstance(defaults[key], bool):
      if value.lower() not in ("true", "false"):
        raise ValueError(f"Config string item {item!r}: {key} is true or false.")
      result[key] = value.lower() == "true"
    else:
      result[key] = type(defaults[key])(value)
  if "domain" in result and not envs.is_domain(result.domain):
    raise ValueError(f"domain={result.domain!r} is not one of: {', '.join(envs.names())} "
                     "(or a 'package.module:Class').")
  if "domain" in result and result.domain not in envs.names():
    envs.get_class(result.domain)  # one-line ValueError naming it
  if "size" in result and result.size not in SIZES:
    raise ValueError(f"size={result.size!r} is not one of: {', '.join(SIZES)}.")
  return result
