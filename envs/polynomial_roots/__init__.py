"""Integer roots of quadratics and cubics, solved by eight different algorithms.

A problem is a polynomial `a (x - r1) (x - r2) [(x - r3)]` with integer roots
`|r_i| <= root_range` and leading coefficient `min_lead <= a <= lead_range`, given
expanded: the prompt is `2x²+-10x+12=0` (every power down to x⁰, `+-` for minus).
A response is a sequence of steps separated by `;`, then the answer marker `#`,
the roots and EOS (`$`). Numbers are a digit run with an optional `-` token in
front (no leading zeros).

**The answer** is the multiset of roots in canonical order: ascending, a repeated
root written as often as its multiplicity, exactly `degree` numbers separated by
`,` (`x³-3x+2` -> `#-2,1,1`). Any other order or count earns 0.

Strategies (labels in this order, family in brackets; examples for the problem named):

0. `factor` [factoring] -- factor by inspection, roots read off the factors (all
   problems). `2(x+-2)(x+-3)#2,3` for 2x²-10x+12.
1. `quadratic_formula` [formula] -- D = b²-4ac, its root, (-b ± √D)/2a (degree 2).
   `D=-10*-10+-4*2*12=4;√4=2;(10±2)/4#2,3`.
2. `complete_square` [shift] -- (x + b/2a)² = (b/2a)² - c/a, then x = -b/2a ± root
   (degree 2 with b/a even, i.e. roots of equal parity).  `(x+-3)²=9+-8=1;x=3±1#2,4`.
3. `vieta_pairs` [vieta] -- S = r1+r2 = -b/a, P = r1 r2 = c/a, try factor pairs
   of P (smaller factor 1, 2, 3, ...) until the sum is S (degree 2, c != 0).
   `S=5,P=6;1+6=7;2+3=5#2,3`.
4. `rational_root` [root_search] -- P = c0/a; test the divisors t of P (1, -1, 2,
   -2, ...) by the remainder f(t) of synthetic division until degree-1 roots are
   found; the last root is S minus them (c0 != 0, not a triple root).
   `P=6;1|2;-1|12;2|0;S=5#2,3` for x²-5x+6.
5. `integer_scan` [root_search] -- evaluate f at 0, 1, -1, 2, -2, ... until
   degree-1 roots are found; the last from S (not a triple root). `f0=6;f1=2;f-1=12;f2=0;S=5#2,3`.
6. `grouping` [factoring] -- x²(ax+b) + m(ax+b) = (ax+b)(x²+m) (degree 3 with
   a d = b c, i.e. two roots ±s). `x²(1x+-1)+-4(1x+-1);x=1,±2#-2,1,2` for x³-x²-4x+4.
7. `depressed_cubic` [shift] -- shift x = y + h (h = -b/3a) to y³ + p y = 0
   (degree 3 with roots in arithmetic progression). `x=y+2;y³+-1y=0;y=0,±1#1,2,3`.

Which strategy works hinges on properties that cost work to read off the prompt:
whether b is a multiple of 2a (complete_square), whether a d = b c (grouping),
whether the roots are in arithmetic progression (depressed_cubic), whether
c0 = 0, and -- through the token budget -- where a root sits among the divisors
of c/a (vieta_pairs, rational_root) or how far the roots are from 0
(integer_scan): a strategy *applies* only if its full correct trace fits in
`max_response_len` tokens. Degree (visible) decides the rest. `factor` applies
everywhere, so every problem has at least one applicable strategy.

**Labels** follow `envs.kit.strategy`: each strategy has a regular step grammar
over symbols (in `strategies`, beside its trace builder; e.g. vieta_pairs is
`S = N , P = N { ; N + N = N }+ # N , N $` with N a signed number), compiled with
the others into one DFA. The numbers are free, so a slip or a miscopied
coefficient keeps the label and costs the reward; post-checks hold the grammars'
literal constants (the -4 of the formula, the evaluation point 0 of the scan,
the 0s of the depressed cubic). A response that follows no grammar to EOS, or
only states an answer, is DEGENERATE. Labels do not depend on applicability.

**Reward** is 1 iff the response contains EOS, the symbols between the last `#`
and EOS are exactly `degree` comma-separated well-formed numbers, and they equal
the sorted roots stored in the problem (checked from the problem; the work is
never compared to a reference).

**Params** (`problems.PolynomialParams`): `root_range`, `min_lead` and
`lead_range` (the leading coefficient is uniform in [min_lead, lead_range]),
`cubic_prob`, and `structured_prob` (the share of cubics drawn with a ±s root
pair or roots in arithmetic progression, half each, so grouping and
depressed_cubic get a fair number of problems). Training (`default_params`):
roots in [-6, 6], leading coefficient 1..3, 30% cubics: 1,638 distinct
problems, of which `polyepo.splits` holds a quarter out for `validation` and
`test` by hash. **OOD** (`ood_params`): leading coefficient 4..5, above any
training problem's, all cubics, structured_prob 0.5: larger coefficients
throughout, quadratic_formula, complete_square and vieta_pairs never apply, the
searches often run past the budget. The static bounds |root| <= 6, a <= 5 size
prompts and candidate lists.
"""

from envs.polynomial_roots.env import PolynomialRoots
from envs.polynomial_roots.problems import (ANSWER, STOI, VOCAB, PolynomialParams,
                                            PolynomialProblems)
from envs.polynomial_roots.strategies import STRATEGIES, STRATEGY_NAMES

ITOS = VOCAB.itos
VOCAB_SIZE = VOCAB.size
