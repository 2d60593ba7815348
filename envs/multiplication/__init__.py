"""Multiplication of two whole numbers, solved by eight different algorithms.

A problem is `a * b` with `digits_a`- and `digits_b`-digit factors (default 2 x 2).
The prompt is `37*48?`; a response is a sequence of steps, each ending in `;`,
then the answer marker `#`, the answer and EOS: `37*8=296;37*40=1480;296+1480=1776;#1776`.

Strategies (labels in this order, family in brackets; examples for 37 * 48 or
a problem they apply to):

0. `long_by_b` [long]: long multiplication, a times each digit of b (units
   first), then the partial products added.  `37*8=296;37*40=1480;296+1480=1776;#1776`
1. `long_by_a` [long]: the same by the digits of a (`48*7=336;48*30=1440;...`);
   applies when a != b (else it is `long_by_b`).
2. `place_value`: (30+7)(40+8), all digit-times-digit partials with their place
   values, highest first, then one sum.  `30*40=1200;30*8=240;7*40=280;7*8=56;...`
3. `round_adjust`: round the factor with the larger units digit (b on ties) up
   to the next multiple of ten and subtract the excess.
   `37*50=1850;37*2=74;1850-74=1776;#1776`. Applies when that units digit is >= 6.
4. `difference_of_squares`: a*b = m^2 - d^2 with m the midpoint, d the half gap.
   `42-6=36;42+6=48;42*42=1764;6*6=36;1764-36=1728;#1728` for 36 * 48. Applies
   when a and b have the same parity and differ.
5. `halve_double`: halve one factor and double the other until the halved one
   is odd.  `24*74;12*148;6*296;3*592=1776;#1776`. Applies when a (else b) is
   c * 2^k with c odd and at most 9, k >= 1 (12, 14, 16, 18, 20, 24, 28, 32, ...).
6. `factor_out`: b (else a) is p*q with single digits 2 <= p <= q <= 9 (p the
   smallest such), so a*b = (p*a)*q: `6*37=222;222*8=1776;#1776`. Applies when b
   or a is such a product (48 = 6*8 yes, 91 = 7*13 no).
7. `karatsuba`: z2 = A*C, z0 = B*D, z1 = (A+B)(C+D) - z2 - z0, then
   100 z2 + 10 z1 + z0.  `3*4=12;7*8=56;10*12=120;120-12-56=52;1200+520+56=1776;#1776`.
   Only for 2-digit x 2-digit problems.

Which strategies apply thus hinges on parity and units digits (visible) but also
on factor structure (is 91 or 57 a product of digits?), and which succeed for a
model on carry patterns.

**Labels** follow `envs.kit.strategy`: each strategy's step grammar (in
`strategies`, beside its trace builder) fixes the sequence of numbers and
operators of its trace for this problem size, with the numbers free, so an
arithmetic slip or a miscopied operand keeps the label and costs only the
reward. Two post-checks on numbers complete it: the first operand tells the long
multiplications apart, and halve_double's first factor is half of a or b.

**Reward** is 1 iff the response contains EOS and its last symbols before EOS
are `#` and a well-formed number (no leading zero) equal to a * b, computed
from the problem. The work itself is never checked for reward.

**Length.** `max_response_len` defaults to the longest correct trace over all
problems (64 for 2 x 2: place_value's 63 tokens with EOS, e.g. 99 * 99).

**Params** (`problems.MultiplicationParams`): a factor is *large* from
leading digit `large_from` (5: 50 or more). Training (`default_params`): at most
one large factor, uniform over those 5,600 of the 8,100 2 x 2 problems, of
which `polyepo.splits` holds a quarter out for `validation` and `test` by hash.
**OOD** (`ood_params`, `both_large`): both factors 50..99, the 2,500 problems
training never shows. Every factor occurs in training, but never two large
ones together: the partial products of long multiplication (87*90), the
squares of difference_of_squares and the products themselves are larger than
any training problem's.
"""

from envs.multiplication.env import Multiplication
from envs.multiplication.problems import (STOI, VOCAB, MultiplicationParams,
                                          MultiplicationProblems)
from envs.multiplication.strategies import STRATEGIES, STRATEGY_NAMES

ITOS = VOCAB.itos
VOCAB_SIZE = VOCAB.size
