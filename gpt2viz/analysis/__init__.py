"""Experiments on a run: head scores and the head finder (heads), the logit lens (lens), knock-outs
and patching (whatif), and the Experiments page's one-change experiments (experiments).
May import: spec, model, anatomy."""
