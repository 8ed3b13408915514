"""ROS 2 nodes of the robot side: policy_node (and, with the real FR3, its driver and console)."""
