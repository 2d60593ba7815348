"""The environments kit: what every synthetic domain is built from.

* `symbols`: a response read as numbers and operator tokens, and written back;
* `grammar`: step grammars over symbols compiled into one labelling DFA;
* `trace`: the trace builder a strategy writes its work into, with slips;
* `strategy`: a strategy declared once (trace builder + grammar + post-check)
  and the labelling rule shared by every domain;
* `text`: vocabularies, response text and answer ids;
* `env`: `KitEnv`, the `Env` methods every domain shares.

`envs.testing.check_env` checks a domain against the `Env` contract;
docs/adding-a-domain.md walks through a small one.
"""
