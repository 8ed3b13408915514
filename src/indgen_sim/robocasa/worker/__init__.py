"""What runs inside RoboCasa's own environment (`python src/indgen_sim/robocasa/worker`):
RoboCasa's task classes on a kitchen IndGen builds, one request at a time from stdin.

Nothing here imports IndGen's core: that environment holds only RoboCasa, robosuite and their
dependencies. Modules import each other by their plain names (this folder is the script's
path); `frames.py` is also imported by IndGen's side as `indgen_sim.robocasa.worker.frames`."""
