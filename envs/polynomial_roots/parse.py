"""Polynomial questions typed as text: a small algebra reader for one variable."""

import re

def poly_text(coeffs) -> str:
  """`2x^2 - 10x + 12 = 0` from ascending integer coefficients."""
  terms = []
  for k in range(len(coeffs) - 1, -1, -1):
    v = int(coeffs[k])
    if v == 0:
      continue
    mag = abs(v)
    body = {0: f"{mag}", 1: "x", 2: "x^2", 3: "x^3"}[k]
    if k and mag != 1:
      body = f"{mag}{body}"
    if not terms:
      terms.append(("-" if v < 0 else "") + body)
    else:
      terms.append(("- " if v < 0 else "+ ") + body)
  return " ".join(terms) + " = 0"


_FUNC = re.compile(r"\b(eq|solve|solveset|roots|real_roots|nroots|poly)\s*\((.*)\)", re.S)
_TERM = re.compile(r"([+-])(\d*)(\*?x(?:\^(\d+))?)?")


def _split_args(inner):
  """Top-level comma-separated arguments of a function call body."""
  depth, start, out = 0, 0, []
  for i, ch in enumerate(inner):
    depth += {"(": 1, ")": -1}.get(ch, 0)
    if ch == "," and depth == 0:
      out.append(inner[start:i])
      start = i + 1
  return out + [inner[start:]]


def _side_coeffs(side, text):
  """Ascending coefficients {power: int} of one side of an equation."""
  s = side.replace(" ", "")
  if not s:
    raise ValueError(f"Cannot parse {text!r}: an empty side of the equation.")
  while True:
    t = s.replace("+-", "-").replace("-+", "-").replace("--", "+").replace("++", "+")
    if t == s:
      break
    s = t
  if s[0] not in "+-":
    s = "+" + s
  out, pos = {}, 0
  while pos < len(s):
    m = _TERM.match(s, pos)
    if m is None or m.end() == pos or (not m.group(2) and not m.group(3)):
      raise ValueError(
          f"Cannot parse {text!r}: {side.strip()!r} is not a sum of integer "
          "multiples of powers of x (e.g. '2*x**2 - 10*x + 12' or '2x^2-10x+12').")
    sign = -1 if m.group(1) == "-" else 1
    coef = int(m.group(2)) if m.group(2) else 1
    power = 0 if not m.group(3) else int(m.group(4) or 1)
    out[power] = out.get(power, 0) + sign * coef
    pos = m.end()
  return out


def _integer_roots(coeffs):
  """Integer roots (ascending, with multiplicity) of ascending int coefficients,
  or None if some root is not an integer."""
  c = list(coeffs)
  roots = []
  while len(c) > 1:
    if c[0] == 0:
      roots.append(0)
      c = c[1:]
      continue
    n = abs(c[0])
    found = None
    for t in (s * q for q in range(1, n + 1) if n % q == 0 for s in (1, -1)):
      if sum(ck * t**k for k, ck in enumerate(c)) == 0:
        found = t
        break
    if found is None:
      return None
    # Synthetic division by (x - found), highest power first.
    hi = c[::-1]
    quo = [hi[0]]
    for ck in hi[1:-1]:
      quo.append(ck + found * quo[-1])
    c = quo[::-1]
    roots.append(found)
  return sorted(roots)


def _rename_variable(s, text):
  """`s` with its one variable (any letter: `c`, `s`, `x`, ...) written as x.

  A variable is a single letter next to a digit or an operator (`c^2`, `40*c`,
  `5c`, `c + 1`), unlike the words around the equation (`Calculate c.`);
  ValueError if two letters are.
  """
  after = re.findall(r"(?:(?<=[-+*^=\d])|(?<=[-+*^=\d]\s))([a-z])(?![a-z(])", s)
  before = re.findall(r"(?<![a-z])([a-z])(?=\s?[-+*^=])", s)
  letters = sorted(set(after) | set(before))
  if len(letters) > 1:
    raise ValueError(f"Cannot parse {text!r}: more than one variable ({', '.join(letters)}); "
                     "this env solves polynomials in one variable.")
  if not letters or letters[0] == "x":
    return s
  return re.sub(rf"(?<![a-z]){letters[0]}(?![a-z])", "x", s)


def parse_one(text, max_root, max_lead):
  """(degree, ascending coeffs[4], roots[3]) of one question; ValueError if bad."""
  s = str(text).lower()
  for a, b in (("**", "^"), ("²", "^2"), ("³", "^3"), ("−", "-"), ("·", "*"), ("×", "*")):
    s = s.replace(a, b)
  if re.search(r"\d\.\d|/", s):
    raise ValueError(f"Cannot parse {text!r}: coefficients must be integers.")
  s = _rename_variable(s, text)
  m = _FUNC.search(s)
  if m:
    args = _split_args(m.group(2))
    s = f"{args[0]} = {args[1]}" if m.group(1) == "eq" and len(args) == 2 else args[0]
  runs = [r for r in re.findall(r"[-+0-9x*^= ]+", s) if "x" in r]
  if not runs:
    raise ValueError(f"Cannot parse {text!r}: no polynomial in one variable found.")
  eq = max(runs, key=lambda r: len(r.strip())).strip()
  sides = eq.split("=")
  if len(sides) > 2:
    raise ValueError(f"Cannot parse {text!r}: more than one '='.")
  lhs = _side_coeffs(sides[0], text)
  rhs = _side_coeffs(sides[1], text) if len(sides) == 2 else {0: 0}
  powers = {k: lhs.get(k, 0) - rhs.get(k, 0) for k in set(lhs) | set(rhs)}
  nonzero = [k for k, v in powers.items() if v != 0]
  degree = max(nonzero) if nonzero else 0
  if degree not in (2, 3):
    raise ValueError(
        f"{text!r} has degree {degree}: only quadratics and cubics (degree 2-3) are supported.")
  coeffs = [powers.get(k, 0) for k in range(4)]
  if coeffs[degree] < 0:
    coeffs = [-v for v in coeffs]
  lead = coeffs[degree]
  if lead > max_lead:
    raise ValueError(
        f"{text!r} is out of range: leading coefficient {lead} exceeds {max_lead} "
        "(raise max_lead).")
  roots = _integer_roots(coeffs[:degree + 1])
  if roots is None:
    raise ValueError(f"{text!r} does not have integer roots (this env needs "
                     "a polynomial a(x - r1)(x - r2)... with integer r_i).")
  if max(abs(r) for r in roots) > max_root:
    raise ValueError(f"{text!r} is out of range: roots {roots} exceed |r| <= {max_root} "
                     "(raise max_root).")
  return degree, coeffs, roots + [0] * (3 - degree)

