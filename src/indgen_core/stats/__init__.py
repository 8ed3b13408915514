"""The statistics of a campaign, each idea in one module:

- `level_stats`: per-level intervals, the break level and the monotonicity check (statsmodels, scipy);
- `sequential`: the anytime-valid confidence sequence and its verdicts, and the defaults
  (confidence, alpha, break threshold) stated once;
- `comparisons`: two policies at each level, paired or not, with Holm's correction;
- `break_search`: where the break lies as a confidence set, and which level to test next;
- `sample_sizes`: how many trials a campaign needs, before it runs;
- `ppi`: the twin beside the robot (prediction-powered intervals).

Nothing is imported here: a module that needs only the defaults does not pay for scipy.
"""
