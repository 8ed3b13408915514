"""The robot side's ROS layer: policy_node (the inference node every world talks to), the FR3
runner, the camera node, franka's recovery services and the operator console's link to the
graph. The runner's logic, the safety checks and the console itself are plain code outside it."""
