"""ROS 2 nodes of the core (progression_manager, scorer) and the one conversion module
between plain records and indgen_msgs. Only modules in this package import rclpy."""
