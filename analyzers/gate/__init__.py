"""The regression gate's pure core (docs/gating.md); nothing here reads a file or prints.

* :mod:`.metrics`: the gateable series of a validated JSON summary (``extract_metrics``);
* :mod:`.rules`: thresholds and statistical settings (``GateRules``, ``parse_rules``);
* :mod:`.statistics`: spread, pooled per-call statistics and the one-sided tests;
* :mod:`.baseline`: what a candidate is compared with and how it is chosen (one summary, or
  the latest environment segment of a store's runs);
* :mod:`.verdicts`: the per-series verdicts and the overall outcome (``decide``, ``evaluate``);
* :mod:`.environment`: the testbed fingerprint of a summary;
* :mod:`.changepoints`: level shifts in a series of runs (the history page).

The CLI (``cli/gate.py``) reads the inputs and opens the store; ``reports/gate_outputs.py``
renders the verdict document.
"""
