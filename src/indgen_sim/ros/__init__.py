"""The simulated worlds' ROS layer: sim_bridge, the per-world topic adapters, the FR3 cell
stand-in and its cameras. The worlds and the stand-in's physics are plain code outside it."""
