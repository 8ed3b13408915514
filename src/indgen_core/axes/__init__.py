"""Axes and their progressions (paper section 4):

- `progression`: an axis, its levels and how a level's parameter value is made;
- `spec`: the YAML schema of an axis file, with the sentence a bad file is refused with;
- `units`: the units a parameter may be declared in, and their conversion to SI;
- `conditions`: the paper's conditions on a progression (Definition 4, Assumptions 4.1-4.2),
  checked on the levels a campaign is about to run.
"""
