"""RoboCasa (RoboCasa365 v1.0.1, the `rlinf-robocasa365` redistribution) as an IndGen world.

RoboCasa runs in an environment of its own (`.venv-robocasa`, `make robocasa`): it needs
robosuite 1.5.2, mujoco below 3.10 and numpy below 2, where IndGen's environment has LIBERO's
robosuite, a newer mujoco and numpy 2. `world.py` (IndGen's side) starts `worker/` in that
environment and speaks to it over the worker's stdin and stdout (`worker/frames.py`): a pipe
binds no port, needs no discovery, and dies with the world that owns it.
"""
