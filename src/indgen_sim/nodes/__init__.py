"""ROS 2 nodes of the simulated worlds: sim_bridge and the per-world topic adapters."""
