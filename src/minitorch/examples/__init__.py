"""Examples that train models with minitorch: the tense classifier behind ``minitorch demo``
(:mod:`minitorch.examples.tense`) and its verb grammar grid
(:mod:`minitorch.examples.grammar`)."""
