"""Multiplication questions typed as text: `What is 37 times 48?`, `37 x 48`, ..."""

import re
from typing import List, Sequence, Tuple

_NUM = r"(-?\d+(?:\.\d+)?|-?\.\d+)"  # signed and decimal too: refused later, saying why
_PATTERNS = tuple(re.compile(p.replace("NUM", _NUM)) for p in (
    # "37*48", "37 x 48", "What is 37 times 48?", "(37)*(48) = ?", "Compute 37·48."
    r"^(?:what\s+is|what's|compute|calculate|evaluate|find|work\s+out)?\s*"
    r"\(?\s*NUM\s*\)?\s*(?:\*|x|×|·|times|multiplied\s+by)\s*"
    r"\(?\s*NUM\s*\)?\s*(?:=\s*\??)?\s*[?.!]?$",
    r"^multiply\s+NUM\s+(?:by|and|with)\s+NUM\s*[?.!]?$",
    # "What is the product of 37 and 48?", "Product of 37 and 48." (mathematics_dataset)
    r"^(?:what\s+is\s+|what's\s+|find\s+|calculate\s+|compute\s+|work\s+out\s+|give\s+)?"
    r"(?:the\s+)?product\s+of\s+NUM\s+and\s+NUM\s*[?.!]?$",
    # sympy: Mul(37, 48), Mul(Integer(37), Integer(48))
    r"^mul\(\s*(?:integer\()?\s*NUM\s*\)?\s*,\s*(?:integer\()?\s*NUM\s*\)?\s*\)$",
))


def parse_factors(texts: Sequence[str], digits_a: int, digits_b: int) -> List[Tuple[int, int]]:
  """(a, b) of each question.

  Raises:
    ValueError: quoting the text: "Cannot parse" if it is not a product of two
    numbers; "out of range", saying why, if a factor is negative, not whole, or
    does not have `digits_a` / `digits_b` digits.
  """
  out = []
  for text in texts:
    norm = " ".join(str(text).strip().lower().split())
    match = next((m for p in _PATTERNS if (m := p.match(norm))), None)
    if match is None:
      raise ValueError(
          f"Cannot parse {text!r}: expected a product of two whole numbers, "
          "e.g. 'What is 37 times 48?', '37*48', '37 x 48' or 'Mul(37, 48)'.")
    a, b = match.group(1), match.group(2)
    for name, s, d in (("first", a, digits_a), ("second", b, digits_b)):
      if "." in s:
        raise ValueError(f"{text!r} is out of range: the {name} factor {s} is not a whole "
                         "number (this env multiplies positive whole numbers).")
      if s.startswith("-"):
        raise ValueError(f"{text!r} is out of range: the {name} factor {s} is negative "
                         "(this env multiplies positive whole numbers).")
      if len(s) != d or s[0] == "0":
        raise ValueError(
            f"{text!r} is out of range: the {name} factor {s} must have exactly "
            f"{d} digits (this env multiplies {digits_a}-digit by {digits_b}-digit numbers).")
    out.append((int(a), int(b)))
  return out
