"""IndGen's episodes as LeRobot datasets, for the train-on-more-levels loop (paper, section 4).

`indgen dataset export` turns recorded trials (bags, real or simulated) or a world's oracle
demonstrations into a LeRobot dataset in DROID's layout, the one openpi fine-tunes pi0.5-DROID
from. The dataset is written by the lerobot library itself, run in its own environment
(lerobot_env.py), never by a copy of its format here:

    layout.py      the DROID layout: features, 16:9 frames, executed actions, the Episode record
    from_bag.py    episodes from recorded bags, one per scored attempt
    staging.py     episodes as arrays on disk, for the writer in lerobot's environment
    lerobot_env.py where that environment is and how it is run
    lerobot_io.py  the script that runs there (imports lerobot, never IndGen)
    export.py      the whole export: all or nothing
"""
