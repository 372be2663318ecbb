"""The answer selector (issue #35): one calibrated model chooses the unit that answers a question, or none.

A candidate is a unit (sentence, list item, table row, code line) of a retrieved chunk. The selector is a conditional
logit over one question's candidates **and a "no answer" option** (its logit is a learned constant):
``P(unit i answers) = exp(w·x_i) / (exp(b) + Σ_j exp(w·x_j))``. Weak candidates all round leave the probability with
"no answer"; one strong candidate takes it. A small calibrator turns that into the probability that the quote
answers; the run quotes it when this reaches the threshold, else it abstains.

The package, by job:

* :mod:`.features`: the candidates of a question and their features (:data:`~.features.FEATURES`);
* :mod:`.model`: the fitted model (:class:`~.model.ReaderModel`, weights in ``reader_weights.json`` beside the
  ``evidence`` package, written by ``python bench/train_reader.py`` from dev data only) and its gate;
* :mod:`.scorer`: :class:`~.scorer.ReadingScorer`, the evidence scorer whose answer is the model's choice
  (``evidence.reader``);
* :mod:`.quote`: the quote assembled around the chosen unit (the unit beside it that states the value asked for).
"""
